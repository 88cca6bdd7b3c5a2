package nvvm

import (
	"fmt"
	"slices"

	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Strided kernels at symbolic sizes (plan.Kernel.Sizes; docs/dynamic.md), as codegen/ptx's
// symstride.go and symview.go: a buffer whose symbolic dims do not lead ([2, seq, 48]) is laid
// out contiguously at the run's sizes, so the views a kernel reads it through have sizes and
// strides that are expressions over the dims. The kernel takes each dim they name as an i32
// parameter (plan.Arg.Expr, sorted by name, after the buffers and before the size) and computes
// coordinates and linear indices from them where the bound's code has immediates.

// symStrideArgs is symArgs with a parameter for each dim k.Sizes names before the size:
// codegen/ptx's order.
func symStrideArgs(k plan.Kernel, units int, what string) ([]plan.Arg, int, error) {
	args, scale, err := symArgs(k, units, what)
	if err != nil {
		return nil, 0, err
	}
	return slices.Insert(args, len(args)-1, symDimArgs(k.Sizes)...), scale, nil
}

// symDimArgs is a size parameter for each dim sizes name, sorted (plan.Arg.Expr).
func symDimArgs(sizes map[*irg.Value][]sym.Expr) []plan.Arg {
	var names []string
	for _, s := range sizes {
		for _, e := range s {
			names = append(names, e.Symbols()...)
		}
	}
	slices.Sort(names)
	var dims []plan.Arg
	for _, n := range slices.Compact(names) {
		dims = append(dims, plan.Arg{Kind: plan.ArgSize, Expr: n})
	}
	return dims
}

// symView evaluates views at the run's sizes: the dims' parameters and the values' sizes.
type symView struct {
	kg    *kgen
	dims  map[string]value.Value
	sizes map[*irg.Value][]sym.Expr
}

// newSymView binds the dims' parameters of a kernel whose parameters are args (symStrideArgs);
// nil for a kernel without sizes.
func (kg *kgen) newSymView(k plan.Kernel, args []plan.Arg) *symView {
	if k.Sizes == nil {
		return nil
	}
	sv := &symView{kg: kg, dims: map[string]value.Value{}, sizes: k.Sizes}
	for i, a := range args {
		if a.Kind == plan.ArgSize && a.Expr != "" {
			sv.dims[a.Expr] = kg.f.Params[i]
		}
	}
	return sv
}

// valid says why e cannot be evaluated at the run's sizes (codegen/ptx's words), or nil.
func (sv *symView) valid(e sym.Expr) error {
	c, ms, ok := e.Monomials()
	switch {
	case !ok:
		return fmt.Errorf("size %s has a floor division, which run-time strides do not take yet", e)
	case len(ms) == 0 && (c < 0 || c >= 1<<31):
		return fmt.Errorf("size %s is outside 32 bits", e)
	}
	for _, m := range ms {
		for _, n := range m.Names {
			if _, ok := sv.dims[n]; !ok {
				return fmt.Errorf("size %s names %s, which the kernel does not take", e, n)
			}
		}
	}
	return nil
}

// check validates every size of the views under v, which must lead to a buffer, so that eval
// cannot fail later.
func (sv *symView) check(v *irg.Value) error {
	for u := v; ; u = u.Args[0] {
		for _, e := range plan.SymSizes(u, sv.sizes) {
			if err := sv.valid(e); err != nil {
				return err
			}
		}
		switch u.Op {
		case "transpose", "slice", "broadcast_in_dim", "reshape":
			continue
		case irg.OpInput, irg.OpParam:
			return nil
		}
		return fmt.Errorf("%s is computed inside the kernel; a contraction reads only views of buffers", u.Op)
	}
}

// eval is e at the run's sizes (a constant when e is), modulo 2^32 as codegen/ptx's .s32
// arithmetic. e was checked (valid).
func (sv *symView) eval(e sym.Expr) value.Value {
	kg := sv.kg
	c, ms, _ := e.Monomials()
	var r value.Value = ci(int(int32(c)))
	for _, m := range ms {
		t := sv.dims[m.Names[0]]
		for _, n := range m.Names[1:] {
			t = kg.b.NewMul(t, sv.dims[n])
		}
		r = kg.add(r, kg.mul(t, int(int32(m.Coef))))
	}
	return r
}

// mul is x·y for i32 values, folding constants.
func (sv *symView) mul(x, y value.Value) value.Value {
	if n, ok := num(y); ok {
		return sv.kg.mul(x, n)
	}
	if n, ok := num(x); ok {
		return sv.kg.mul(y, n)
	}
	return sv.kg.b.NewMul(x, y)
}

// lin follows the views from v at coordinates c down to the buffer, returning it and the
// linear index there, at the run's sizes.
func (sv *symView) lin(v *irg.Value, c []value.Value) (*irg.Value, value.Value) {
	for {
		if v.Op == irg.OpInput || v.Op == irg.OpParam {
			return v, sv.linear(plan.SymSizes(v, sv.sizes), c)
		}
		v, c = v.Args[0], sv.operandCoords(v, c)
	}
}

// operandCoords maps coordinates c of view v to its operand's holding the same element, at the
// run's sizes.
func (sv *symView) operandCoords(v *irg.Value, c []value.Value) []value.Value {
	kg := sv.kg
	out := plan.SymSizes(v, sv.sizes)
	in := plan.SymSizes(v.Args[0], sv.sizes)
	ic := make([]value.Value, len(in))
	switch v.Op {
	case "transpose":
		for i, p := range v.Attrs.Ints("perm") {
			ic[p] = c[i]
		}
	case "slice":
		start, step := v.Attrs.Ints("start"), v.Attrs.Ints("stride")
		for i := range ic {
			st := 1
			if step != nil {
				st = step[i]
			}
			ic[i] = kg.add(kg.mul(c[i], st), ci(start[i]))
		}
	case "broadcast_in_dim":
		for i, d := range v.Attrs.Ints("dims") {
			ic[i] = c[d]
			if plan.IsOne(in[i]) {
				ic[i] = ci(0)
			}
		}
	case "reshape":
		ic = sv.delinearize(in, sv.linear(out, c))
	}
	return ic
}

// linear is Σ c[i]·stride_i of a contiguous tensor of sizes at the run.
func (sv *symView) linear(sizes []sym.Expr, c []value.Value) value.Value {
	var r value.Value = ci(0)
	for i, st := range plan.SymContiguous(sizes) {
		if !plan.IsOne(sizes[i]) {
			r = sv.kg.add(sv.mul(c[i], sv.eval(st)), r)
		}
	}
	return r
}

// delinearize splits linear index x into coordinates over sizes at the run.
func (sv *symView) delinearize(sizes []sym.Expr, x value.Value) []value.Value {
	kg := sv.kg
	c := make([]value.Value, len(sizes))
	for i := len(sizes) - 1; i > 0; i-- {
		n := sv.eval(sizes[i])
		if m, ok := num(n); ok {
			c[i], x = kg.rem(x, m), kg.div(x, m)
			continue
		}
		c[i], x = kg.b.NewURem(x, n), kg.b.NewUDiv(x, n)
	}
	if len(c) > 0 {
		c[0] = x
	}
	return c
}
