package ir

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
)

// OpChecker checks one node against its op's definition (arity, attributes, result type). Package
// ops supplies the checker for the op table; Verify handles everything that does not depend on ops.
type OpChecker func(g *Graph, v *Value) error

// VerifyError is a verifier failure located at one value, or at the graph's file. Its message
// names the node in the text syntax: "model.go:17: %3 = add(%1, %2) : f32[4]: operand types
// differ".
type VerifyError struct {
	Where string // file:line, or the file, or empty
	Node  string // the offending statement in the text form, without its loc(...)
	Msg   string
}

func (e *VerifyError) Error() string {
	s := ""
	if e.Where != "" {
		s = e.Where + ": "
	}
	if e.Node != "" {
		s += e.Node + ": "
	}
	return s + e.Msg
}

var (
	// identRE is the form of graph and output names.
	identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)
	// valueNameRE is the form of value names; they may start with a digit ("0.weight", as PyTorch
	// names a Sequential's children) but may not be all digits, which is how unnamed values print.
	valueNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.]*$`)
)

// Verify checks the structure of g (single definitions, definition before use, which also rules out
// cycles and dangling values; names; types; outputs) and then every node with check, if not nil.
// It returns the first problem found.
func Verify(g *Graph, check OpChecker) error {
	fail := func(v *Value, format string, args ...any) error {
		e := &VerifyError{Where: g.File, Msg: fmt.Sprintf(format, args...)}
		if v != nil {
			var sb strings.Builder
			writeStmt(&sb, v, g.Names())
			e.Where, e.Node = v.Where(g), sb.String()
		}
		return e
	}
	if !identRE.MatchString(g.Name) {
		return fail(nil, "graph name %q is not an identifier", g.Name)
	}
	ranges := g.Ranges()
	if msg := checkDims(g.Dims); msg != "" {
		return fail(nil, "%s", msg)
	}
	output := make(map[*Value]bool, len(g.Outputs))
	for _, o := range g.Outputs {
		output[o.Value] = true
	}
	defined := make(map[*Value]bool, len(g.Values))
	ids := make(map[int]bool, len(g.Values))
	names := map[string]bool{}
	for _, v := range g.Values {
		if v == nil {
			return fail(nil, "nil value in the graph")
		}
		if defined[v] {
			return fail(v, "value defined twice")
		}
		if ids[v.ID] {
			return fail(v, "duplicate value ID %d", v.ID)
		}
		ids[v.ID] = true
		for i, a := range v.Args {
			if a == nil {
				return fail(v, "operand %d is nil", i)
			}
			if !defined[a] {
				return fail(v, "operand %d is not defined before its use (a cycle or a value from another graph)", i)
			}
		}
		defined[v] = true
		if v.Name != "" {
			if !valueNameRE.MatchString(v.Name) || isNumber(v.Name) {
				return fail(v, "bad value name %q", v.Name)
			}
			if names[v.Name] {
				return fail(v, "name %q is used twice", v.Name)
			}
			names[v.Name] = true
		}
		if (v.Op == OpInput || v.Op == OpParam) && v.Name == "" {
			return fail(v, "%s needs a name", v.Op)
		}
		if !v.Type.DType.Valid() {
			return fail(v, "invalid dtype")
		}
		for _, d := range v.Type.Shape {
			if d < 0 {
				return fail(v, "negative dimension in %s", v.Type)
			}
		}
		if held := inMemory(v, output[v]); held != "" {
			if n, ok := elements(v.Type.Shape, MaxElements); !ok {
				return fail(v, "too large: its dimensions multiply to %s, and a tensor holds at most %d (2^31-1) elements in memory, where %s always is (kernels index it with 32-bit integers)", n, MaxElements, held)
			}
		} else if n, ok := elements(v.Type.Shape, MaxValueElements); !ok {
			if i := slices.IndexFunc(v.Type.Shape, func(d int) bool { return d > MaxElements }); i >= 0 {
				return fail(v, "too large: dimension %d is %d, and a dimension holds at most %d (2^31-1)", i, v.Type.Shape[i], MaxElements)
			}
			return fail(v, "too large: its dimensions multiply to %s, and a value has at most %d (2^48) elements", n, MaxValueElements)
		}
		if msg := checkSymType(v.Type, ranges); msg != "" {
			return fail(v, "%s", msg)
		}
		if err := checkRange(v); err != "" {
			return fail(v, "%s", err)
		}
		for _, k := range v.Attrs.Keys() {
			switch v.Attrs[k].(type) {
			case int, float64, bool, string, DType, []int, []float64:
			default:
				return fail(v, "attribute %s has unsupported Go type %T", k, v.Attrs[k])
			}
		}
	}
	outs := map[string]bool{}
	for _, o := range g.Outputs {
		if !identRE.MatchString(o.Name) {
			return fail(nil, "bad output name %q", o.Name)
		}
		if outs[o.Name] {
			return fail(nil, "output %s declared twice", o.Name)
		}
		outs[o.Name] = true
		if o.Value == nil || !defined[o.Value] {
			return fail(nil, "output %s refers to a value not in the graph", o.Name)
		}
	}
	if len(g.Outputs) == 0 {
		return fail(nil, "graph %s has no outputs", g.Name)
	}
	if check != nil {
		for _, v := range g.Values {
			if err := check(g, v); err != nil {
				return fail(v, "%s", err.Error())
			}
		}
	}
	return nil
}

// checkRange checks an input's range=[lo,hi] attribute: the values lo <= v < hi must be a
// non-empty set of the input's integer dtype, so that random inputs drawn from it are exactly
// what it says.
func checkRange(v *Value) string {
	a, ok := v.Attrs["range"]
	if !ok || v.Op != OpInput {
		return ""
	}
	r, ok := a.([]int)
	if !ok || len(r) != 2 {
		return "range must be a list of two integers [lo, hi]"
	}
	if !v.Type.DType.IsInt() {
		return fmt.Sprintf("range is for integer inputs, not %s", v.Type.DType)
	}
	lo, hi := int64(r[0]), int64(r[1])
	if lo >= hi {
		return fmt.Sprintf("range=[%d, %d] is empty: the values are lo <= v < hi", lo, hi)
	}
	if min, max := v.Type.DType.IntLimits(); lo < min || hi-1 > max {
		return fmt.Sprintf("range=[%d, %d] is outside %s's values [%d, %d]", lo, hi, v.Type.DType, min, max)
	}
	return ""
}

// MaxElements is the most elements a tensor in memory holds: kernels index tensors with 32-bit
// integers, and the reference interpreter holds every element in 8 bytes (16 GiB at this limit).
// Inputs, parameters and outputs are always in memory, so the verifier holds them to it. A value
// between two ops may be larger when no kernel computes it: the scores of attention's
// decomposition, which the attention pass replaces by one op that never materializes them. The
// memory planner (package passes) refuses, naming the value, one that a kernel would still
// compute, and the reference semantics (ops.Eval) refuse to hold one (Oversize).
const MaxElements = 1<<31 - 1

// MaxValueElements is the most elements any value may have: far beyond any device, it keeps
// element and byte counts, and the flops of a contraction over such a value, inside an int64.
// A dimension holds at most MaxElements still (kernels index each axis with 32-bit integers).
const MaxValueElements = 1 << 48

// Oversize says why a tensor of shape s cannot be in memory (computed by a kernel, placed by the
// memory plan, held by the reference interpreter): "" when it has at most MaxElements elements.
func Oversize(s Shape) string {
	if n, ok := elements(s, MaxElements); !ok {
		return fmt.Sprintf("its dimensions multiply to %s, and a tensor holds at most %d (2^31-1) elements in memory", n, MaxElements)
	}
	return ""
}

// inMemory names what v is when it is always in memory (an input, a parameter, an output), or "".
func inMemory(v *Value, output bool) string {
	switch {
	case v.Op == OpInput:
		return "an input"
	case v.Op == OpParam:
		return "a parameter"
	case output:
		return "an output"
	}
	return ""
}

// elements reports whether shape s fits limit, each dimension MaxElements, counting zero
// dimensions as 1 (strides multiply the other dimensions still), and otherwise the exact product
// for messages.
func elements(s Shape, limit int) (string, bool) {
	n := 1
	for _, d := range s {
		d := max(d, 1)
		if d > MaxElements || n > limit/d { // n·d > limit, asked without overflowing
			prod := big.NewInt(1)
			for _, d := range s {
				prod.Mul(prod, big.NewInt(int64(max(d, 1))))
			}
			return prod.String(), false
		}
		n *= d
	}
	return "", true
}
