package autodiff

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// GradPrefix starts the name of every gradient output Grad adds: "grad.fc1.weight".
const GradPrefix = "grad."

// Grad returns a copy of g with the gradient of the scalar output loss with respect to each named
// parameter or input appended, as outputs "grad.<name>" after g's own outputs. g is not changed.
func Grad(g *ir.Graph, loss string, wrt []string) (*ir.Graph, error) {
	c := g.Clone()
	var lv *ir.Value
	for _, o := range c.Outputs {
		if o.Name == loss {
			lv = o.Value
		}
	}
	if lv == nil {
		return nil, fmt.Errorf("autodiff: graph %s has no output %q", g.Name, loss)
	}
	vs := make([]*ir.Value, len(wrt))
	for i, name := range wrt {
		if vs[i] = c.Lookup(name); vs[i] == nil {
			return nil, fmt.Errorf("autodiff: graph %s has no parameter or input %q", g.Name, name)
		}
	}
	grads, err := Append(c, lv, nil, vs)
	if err != nil {
		return nil, err
	}
	for i, name := range wrt {
		c.SetOutput(GradPrefix+name, grads[i])
	}
	return c, nil
}

// Append differentiates loss (a float value of g) with respect to wrt and appends the backward
// nodes to g, returning one gradient per wrt value, of its type. seed is the incoming gradient of
// loss (of loss's type); nil means 1, which needs a scalar loss. A wrt value that loss does not
// depend on gets a zero gradient. On error g is unchanged.
func Append(g *ir.Graph, loss, seed *ir.Value, wrt []*ir.Value) ([]*ir.Value, error) {
	if !loss.Type.DType.IsFloat() {
		return nil, fmt.Errorf("autodiff: the loss must be a float tensor, have %s", loss.Type)
	}
	if seed == nil && loss.Type.Shape.Rank() != 0 {
		return nil, fmt.Errorf("autodiff: the loss must be a scalar, have %s (reduce it first, or give a seed)", loss.Type)
	}
	if seed != nil && !seed.Type.Equal(loss.Type) {
		return nil, fmt.Errorf("autodiff: the seed is %s, the loss %s", seed.Type, loss.Type)
	}
	for _, w := range wrt {
		if !w.Type.DType.IsFloat() {
			return nil, fmt.Errorf("autodiff: cannot differentiate with respect to %s: it is %s, not a float tensor", w.Name, w.Type)
		}
	}
	n := len(g.Values)
	var out []*ir.Value
	err := Emit(g, func(e *Emitter) { out = backward(e, loss, seed, wrt) })
	if err != nil {
		g.Values = g.Values[:n] // leave nothing half-written
		return nil, err
	}
	return out, nil
}

// backward is reverse-mode accumulation over the values between wrt and loss, in reverse
// definition order (a topological order of g).
func backward(e *Emitter, loss, seed *ir.Value, wrt []*ir.Value) []*ir.Value {
	g := e.G
	// active: float values that depend on a wrt value. Integer and bool values carry no gradient.
	active := map[*ir.Value]bool{}
	for _, w := range wrt {
		active[w] = true
	}
	for _, v := range g.Values {
		if active[v] || !v.Type.DType.IsFloat() {
			continue
		}
		for _, a := range v.Args {
			if active[a] {
				active[v] = true
				break
			}
		}
	}
	// Only values that also reach the loss matter.
	index := map[*ir.Value]int{}
	for i, v := range g.Values {
		index[v] = i
	}
	contrib := map[*ir.Value][]*ir.Value{}
	if active[loss] {
		if seed == nil {
			seed = e.Const(1, loss.Type)
		}
		contrib[loss] = []*ir.Value{seed}
	}
	orig := slices.Clone(g.Values[:index[loss]+1])
	for i := len(orig) - 1; i >= 0; i-- {
		v := orig[i]
		cs := contrib[v]
		if len(cs) == 0 || v.Op == ir.OpInput || v.Op == ir.OpParam {
			continue
		}
		dy := e.AddAll(cs)
		contrib[v] = []*ir.Value{dy}
		need := make([]bool, len(v.Args))
		any := false
		for j, a := range v.Args {
			need[j] = active[a]
			any = any || need[j]
		}
		if !any {
			continue
		}
		r, ok := rules[v.Op]
		if !ok {
			e.Fail("autodiff: %s: no gradient rule for op %s", where(g, v), v.Op)
		}
		for j := range need {
			if need[j] && slices.Contains(r.nondiff, j) {
				e.Fail("autodiff: %s: op %s is not differentiable (argument %d): %s", where(g, v), v.Op, j, r.why)
			}
		}
		e.Pos, e.hints = v.Pos, primalTypes(v)
		grads := r.grad(e, v, dy, need)
		e.Pos, e.hints = "", nil
		for j, a := range v.Args {
			if !need[j] {
				continue
			}
			gj := grads[j]
			if gj == nil || !gj.Type.Equal(a.Type) {
				e.Fail("autodiff: internal error: the %s rule gave argument %d a gradient of type %v, want %s", v.Op, j, typeOf(gj), a.Type)
			}
			contrib[a] = append(contrib[a], gj)
		}
	}
	out := make([]*ir.Value, len(wrt))
	for i, w := range wrt {
		if cs := contrib[w]; len(cs) > 0 {
			out[i] = e.AddAll(cs)
		} else {
			out[i] = e.Const(0, w.Type)
		}
	}
	return out
}

func typeOf(v *ir.Value) any {
	if v == nil {
		return "none"
	}
	return v.Type
}

// where names v for messages: its source position, if known, and its printed form.
func where(g *ir.Graph, v *ir.Value) string {
	s := strings.TrimSuffix(strings.TrimSpace(g.Format(v)), " loc("+strconv.Quote(v.Pos)+")")
	if w := v.Where(g); w != "" {
		return w + ": " + s
	}
	return s
}

// Differentiable reports whether op has a gradient rule for argument arg, and if not, why.
func Differentiable(op string, arg int) (bool, string) {
	r, ok := rules[op]
	if !ok {
		if _, known := ops.Lookup(op); !known {
			return false, "unknown op"
		}
		return false, "no gradient rule"
	}
	if slices.Contains(r.nondiff, arg) {
		return false, r.why
	}
	return true, ""
}
