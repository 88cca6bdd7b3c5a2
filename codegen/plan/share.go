package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/ir"
)

// Kernels whose graphs are the same up to names (the 12 identical blocks of a transformer) have
// the same code: a kernel's buffers are its parameters, so nothing in the code depends on which
// buffers one launch binds. Module generates each such class once, under the name of its first
// kernel, and launches it for the others with their own arguments (Launch.Entry).

// ShareKey is a kernel's graph printed without names and source locations: the inputs and
// params by position and type, then the values the outputs depend on, numbered in the order a
// walk from the outputs meets them (two orders of the same computation print alike). Two kernels
// with equal keys compute the same thing on buffers of the same types and generate the same code
// (TestSharedKernelsGenerateTheSameCode checks it). Persistent kernels name their stages' values
// across Shared, and are not shared: "" is their key.
func ShareKey(k Kernel) string {
	if len(k.Stages) > 0 {
		return ""
	}
	g := k.Graph
	var sb strings.Builder
	if k.Symbolic {
		sb.WriteString("symbolic\n") // its code differs from a static kernel's at the same bound
		if k.Rows > 0 {
			fmt.Fprintf(&sb, "rows %d\n", k.Rows)
		}
	}
	// A symbolic kernel's code also follows the sizes the compiler handed it (strides, a layer's
	// offset): two kernels alike at the bound but with different size expressions differ.
	sizes := func(v *ir.Value) string {
		if e, ok := k.Sizes[v]; ok {
			return fmt.Sprintf(" sizes=%v", e)
		}
		return ""
	}
	id := map[*ir.Value]string{}
	for i, v := range g.Inputs() {
		id[v] = "in" + strconv.Itoa(i)
		fmt.Fprintf(&sb, "%s : %s%s\n", id[v], v.Type, sizes(v))
	}
	for i, v := range g.Params() {
		id[v] = "p" + strconv.Itoa(i)
		fmt.Fprintf(&sb, "%s : %s%s\n", id[v], v.Type, sizes(v))
	}
	var visit func(v *ir.Value)
	visit = func(v *ir.Value) {
		if _, ok := id[v]; ok {
			return
		}
		for _, a := range v.Args {
			visit(a)
		}
		id[v] = strconv.Itoa(len(id))
		fmt.Fprintf(&sb, "%s = %s(", id[v], v.Op)
		for j, a := range v.Args {
			if j > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(id[a])
		}
		sb.WriteString(")")
		for _, key := range v.Attrs.Keys() {
			fmt.Fprintf(&sb, " %s=%s", key, ir.FormatAttr(v.Attrs[key]))
		}
		fmt.Fprintf(&sb, " : %s%s\n", v.Type, sizes(v))
	}
	for _, o := range g.Outputs {
		visit(o.Value)
		fmt.Fprintf(&sb, "out %s\n", id[o.Value])
	}
	return sb.String()
}

// Rebind is the launch of a shared kernel's code for k, whose graph has the same key as the one
// the code was generated for: the same configuration, with k's own buffers as arguments.
func Rebind(l Launch, k Kernel) Launch {
	ins, params := k.Graph.Inputs(), k.Graph.Params()
	out := l
	out.Params = make([]Arg, len(l.Params))
	for i, a := range l.Params {
		switch a.Kind {
		case ArgInput:
			a.Name = ins[a.Index].Name
		case ArgParam:
			a.Name = params[a.Index].Name
		case ArgOutput:
			a.Name = k.Graph.Outputs[a.Index].Name
		}
		out.Params[i] = a
	}
	if len(l.Checks) > 0 {
		out.Checks = IndexChecks(k)
	}
	return out
}

// UsersComment lists the kernels one entry runs for, above the entry in the module, in lines of
// at most 100 columns.
func UsersComment(entry string, users []string) string {
	if len(users) == 1 {
		return ""
	}
	var sb strings.Builder
	line := fmt.Sprintf("// %s runs for %d kernels:", entry, len(users))
	for _, u := range users {
		if len(line)+1+len(u) > 100 {
			sb.WriteString(line + "\n")
			line = "//  "
		}
		line += " " + u
	}
	sb.WriteString(line + "\n")
	return sb.String()
}
