package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Names assigns every value its name in the text form: inputs, parameters and named values keep
// their name; the others are numbered %0, %1, ... in definition order.
func (g *Graph) Names() map[*Value]string {
	names := make(map[*Value]string, len(g.Values))
	n := 0
	for _, v := range g.Values {
		if v.Name != "" {
			names[v] = v.Name
			continue
		}
		names[v] = strconv.Itoa(n)
		n++
	}
	return names
}

// String prints the graph in the .gir text form (see docs/ir.md).
func (g *Graph) String() string {
	var sb strings.Builder
	names := g.Names()
	fmt.Fprintf(&sb, "graph %s {\n", g.Name)
	writeDims(&sb, g.Dims)
	for _, v := range g.Values {
		sb.WriteString("  ")
		writeValue(&sb, v, names)
		sb.WriteByte('\n')
	}
	for _, o := range g.Outputs {
		fmt.Fprintf(&sb, "  output %s = %%%s\n", o.Name, names[o.Value])
	}
	sb.WriteString("}\n")
	return sb.String()
}

// Format prints one value as its statement in the text form, naming values as g names them.
func (g *Graph) Format(v *Value) string {
	var sb strings.Builder
	writeValue(&sb, v, g.Names())
	return sb.String()
}

// Formatter returns Format for many values of g: the names are computed once, where each call of
// Format computes them again (a kernel's comment lists all its values).
func (g *Graph) Formatter() func(v *Value) string {
	names := g.Names()
	return func(v *Value) string {
		var sb strings.Builder
		writeValue(&sb, v, names)
		return sb.String()
	}
}

// FormatAt names v in messages: "model.go:17: %3 = add(%1, %2) : f32[4]", where it is (Where)
// and its statement without the loc(...) that would say it again.
func (g *Graph) FormatAt(v *Value) string {
	var sb strings.Builder
	if w := v.Where(g); w != "" {
		sb.WriteString(w + ": ")
	}
	writeStmt(&sb, v, g.Names())
	return sb.String()
}

func writeValue(sb *strings.Builder, v *Value, names map[*Value]string) {
	writeStmt(sb, v, names)
	if v.Pos != "" {
		fmt.Fprintf(sb, " loc(%s)", strconv.Quote(v.Pos))
	}
}

// writeStmt writes the statement defining v, without its position.
func writeStmt(sb *strings.Builder, v *Value, names map[*Value]string) {
	name := func(a *Value) string {
		if n, ok := names[a]; ok {
			return "%" + n
		}
		return "%<undefined>"
	}
	switch v.Op {
	case OpInput, OpParam:
		fmt.Fprintf(sb, "%s %s : %s", v.Op, name(v), v.Type)
		if len(v.Attrs) > 0 {
			sb.WriteByte(' ')
			writeAttrs(sb, v.Attrs)
		}
	default:
		fmt.Fprintf(sb, "%s = %s(", name(v), v.Op)
		for i, a := range v.Args {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(name(a))
		}
		sb.WriteByte(')')
		if len(v.Attrs) > 0 {
			sb.WriteByte(' ')
			writeAttrs(sb, v.Attrs)
		}
		fmt.Fprintf(sb, " : %s", v.Type)
	}
}

func writeAttrs(sb *strings.Builder, a Attrs) {
	sb.WriteByte('{')
	for i, k := range a.Keys() {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(FormatAttr(a[k]))
	}
	sb.WriteByte('}')
}

// FormatAttr prints one attribute value in the text form.
func FormatAttr(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case float64:
		return FormatFloat(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return strconv.Quote(x)
	case DType:
		return x.String()
	case []int:
		parts := make([]string, len(x))
		for i, n := range x {
			parts[i] = strconv.Itoa(n)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case []float64:
		parts := make([]string, len(x))
		for i, f := range x {
			parts[i] = FormatFloat(f)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprintf("<bad attr %T>", v)
}

// FormatFloat prints f so that it parses back to the same float64 and never looks like an int.
func FormatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
