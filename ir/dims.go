package ir

import (
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/ir/sym"
)

// Dim is a symbolic dimension the graph declares: a size known only at run time, Lo <= size <= Hi.
// Types use it through sym expressions; every pass plans at the bound, Hi (docs/dynamic.md).
type Dim struct {
	Name   string
	Lo, Hi int
}

// Ranges returns the declared dims as sym intervals.
func (g *Graph) Ranges() sym.Ranges {
	r := make(sym.Ranges, len(g.Dims))
	for _, d := range g.Dims {
		r[d.Name] = sym.Interval{Lo: int64(d.Lo), Hi: int64(d.Hi)}
	}
	return r
}

// DeclareDim adds the dim name in [lo, hi] to g and returns its symbol. Verify checks the range.
func (g *Graph) DeclareDim(name string, lo, hi int) sym.Expr {
	g.Dims = append(g.Dims, Dim{name, lo, hi})
	return sym.Sym(name)
}

// checkDim reports what is wrong with a declared dim, or "".
func checkDim(d Dim) string {
	switch {
	case !sym.ValidName(d.Name):
		return fmt.Sprintf("bad dim name %q: a letter or _, then letters, digits or _", d.Name)
	case d.Lo < 0:
		return fmt.Sprintf("dim %s has a negative range [%d,%d]: sizes are at least 0", d.Name, d.Lo, d.Hi)
	case d.Lo > d.Hi:
		return fmt.Sprintf("dim %s has an empty range [%d,%d]: lo > hi", d.Name, d.Lo, d.Hi)
	case d.Hi > MaxElements:
		return fmt.Sprintf("dim %s's bound %d is over 2^31-1, the most elements a tensor holds", d.Name, d.Hi)
	}
	return ""
}

func checkDims(dims []Dim) string {
	seen := map[string]bool{}
	for _, d := range dims {
		if msg := checkDim(d); msg != "" {
			return msg
		}
		if seen[d.Name] {
			return fmt.Sprintf("dim %s declared twice", d.Name)
		}
		seen[d.Name] = true
	}
	return ""
}

// SymType returns the type of dtype d whose axes have the sizes dims, over ranges r: Shape holds
// each axis's upper bound, and Sym is nil when every axis is a constant. An axis that may be
// negative, or an undeclared symbol, is an error naming the expression.
func SymType(d DType, r sym.Ranges, dims ...sym.Expr) (Type, error) {
	t := Type{DType: d, Shape: make(Shape, len(dims))}
	static := true
	for i, e := range dims {
		lo, hi, err := e.Range(r)
		if err != nil {
			return Type{}, fmt.Errorf("dim %d (%s): %v", i, e, err)
		}
		if lo < 0 {
			return Type{}, fmt.Errorf("dim %d (%s) cannot be proven in range: it can be as small as %d over the declared dims", i, e, lo)
		}
		if hi > MaxElements {
			return Type{}, fmt.Errorf("dim %d (%s) can be as large as %d, over 2^31-1", i, e, hi)
		}
		t.Shape[i] = int(hi)
		if _, ok := e.IsConst(); !ok {
			static = false
		}
	}
	if !static {
		t.Sym = append([]sym.Expr(nil), dims...)
	}
	return t, nil
}

// Axis returns the size of axis i as an expression (a constant for a static axis).
func (t Type) Axis(i int) sym.Expr {
	if t.Sym != nil {
		return t.Sym[i]
	}
	return sym.Const(int64(t.Shape[i]))
}

// Axes returns every axis's size as an expression.
func (t Type) Axes() []sym.Expr {
	a := make([]sym.Expr, len(t.Shape))
	for i := range a {
		a[i] = t.Axis(i)
	}
	return a
}

// At returns the static type t has when its dims take the sizes in env.
func (t Type) At(env map[string]int64) (Type, error) {
	if t.Sym == nil {
		return t, nil
	}
	u := Type{DType: t.DType, Shape: make(Shape, len(t.Sym))}
	for i, e := range t.Sym {
		n, err := e.Eval(env)
		if err != nil {
			return Type{}, err
		}
		if n < 0 || n > MaxElements {
			return Type{}, fmt.Errorf("dim %d (%s) is %d at these sizes", i, e, n)
		}
		u.Shape[i] = int(n)
	}
	return u, nil
}

func symString(s []sym.Expr) string {
	parts := make([]string, len(s))
	for i, e := range s {
		parts[i] = e.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// symEqual compares the axes as expressions; a static type's axes are constants.
func symEqual(t, u Type) bool {
	if len(t.Shape) != len(u.Shape) || t.Sym != nil && len(t.Sym) != len(t.Shape) || u.Sym != nil && len(u.Sym) != len(u.Shape) {
		return false
	}
	for i := range t.Shape {
		if !t.Axis(i).Equal(u.Axis(i)) {
			return false
		}
	}
	return true
}

// checkSymType checks a value's symbolic sizes against the graph's dims: one expression per
// axis, every symbol declared, never negative, and the Shape is each expression's bound.
func checkSymType(t Type, r sym.Ranges) string {
	if t.Sym == nil {
		return ""
	}
	if len(t.Sym) != len(t.Shape) {
		return fmt.Sprintf("%d symbolic sizes for %d dimensions", len(t.Sym), len(t.Shape))
	}
	for i, e := range t.Sym {
		for _, s := range e.Symbols() {
			if _, ok := r[s]; !ok {
				return fmt.Sprintf("dim %d (%s) uses %s, which the graph's dims { } do not declare", i, e, s)
			}
		}
		lo, hi, err := e.Range(r)
		switch {
		case err != nil:
			return fmt.Sprintf("dim %d (%s): %v", i, e, err)
		case lo < 0:
			return fmt.Sprintf("dim %d (%s) cannot be proven in range: it can be as small as %d over the declared dims", i, e, lo)
		case hi != int64(t.Shape[i]):
			return fmt.Sprintf("dim %d (%s) has the bound %d over the declared dims, but the shape says %d", i, e, hi, t.Shape[i])
		}
	}
	return ""
}

// writeDims prints the dims statement, "  dims { batch in [1,64], seq in [1,2048] }"; nothing
// for a static graph.
func writeDims(sb *strings.Builder, dims []Dim) {
	if len(dims) == 0 {
		return
	}
	sb.WriteString("  dims {")
	for i, d := range dims {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(sb, " %s in [%d,%d]", d.Name, d.Lo, d.Hi)
	}
	sb.WriteString(" }\n")
}

// BindSizes finds the size of every dim from the shapes of the graph's inputs at run time: a
// dim an input's axis is exactly takes that axis's size, which must lie in its range and agree
// with every other input; then every input's axis must equal its expression at those sizes. The
// errors name the input, the axis and the range.
func (g *Graph) BindSizes(shapes map[string]Shape) (map[string]int64, error) {
	env := map[string]int64{}
	from := map[string]string{} // the input axis each size came from, for messages
	ranges := g.Ranges()
	inputs := g.Inputs()
	for _, v := range inputs {
		s, ok := shapes[v.Name]
		if !ok || v.Type.Sym == nil {
			continue // a missing input is the caller's check
		}
		if len(s) != len(v.Type.Sym) {
			return nil, fmt.Errorf("input %s: want %s, have shape %v", v.Name, v.Type, s)
		}
		for i, e := range v.Type.Sym {
			syms := e.Symbols()
			if len(syms) != 1 || !e.Equal(sym.Sym(syms[0])) {
				continue
			}
			name, n := syms[0], int64(s[i])
			where := fmt.Sprintf("input %s's dim %d", v.Name, i)
			if r := ranges[name]; n < r.Lo || n > r.Hi {
				return nil, fmt.Errorf("input %s: dim %d (%s) is %d, outside %s's range [%d,%d]", v.Name, i, name, n, name, r.Lo, r.Hi)
			}
			if m, ok := env[name]; ok && m != n {
				return nil, fmt.Errorf("inputs disagree on %s: %s is %d, %s is %d", name, from[name], m, where, n)
			}
			env[name], from[name] = n, where
		}
	}
	for _, v := range inputs {
		s, ok := shapes[v.Name]
		if !ok || v.Type.Sym == nil || len(s) != len(v.Type.Sym) {
			continue
		}
		for i, e := range v.Type.Sym {
			for _, name := range e.Symbols() {
				if _, ok := env[name]; !ok {
					return nil, fmt.Errorf("input %s: dim %d is %s, and no input has %s alone as a dim to give its size", v.Name, i, e, name)
				}
			}
			if n, ok := e.IsConst(); ok && n != int64(s[i]) {
				return nil, fmt.Errorf("input %s: dim %d is %d, want %d", v.Name, i, s[i], n)
			}
			if n, err := e.Eval(env); err != nil || n != int64(s[i]) {
				return nil, fmt.Errorf("input %s: dim %d is %d, but %s is %d at %s", v.Name, i, s[i], e, n, formatEnv(env, e.Symbols()))
			}
		}
	}
	return env, nil
}

func formatEnv(env map[string]int64, names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%d", n, env[n])
	}
	return strings.Join(parts, ", ")
}
