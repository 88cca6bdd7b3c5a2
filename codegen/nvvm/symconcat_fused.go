package nvvm

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"
)

// A concat along a symbolic dim fused with computation, as codegen/ptx's symconcat_fused.go (a
// decoder's present_k = concat(past_k, rope(k)), a cast of the step's row before it, tanh or a
// scale after it): one thread per output element of a grid-stride loop delinearizes it over the
// output's sizes at the run and evaluates the graph there. Elementwise ops compute as the loop
// template's do (kgen.elementwise), views map the coordinates to their operand's at the run's
// sizes (symView.operandCoords), inputs load at their linear index at the run, and a concat
// branches to the operand whose offset along its axis is the last at most the coordinate,
// evaluates it there and joins the branches in a phi. Outputs of the same sizes share a loop,
// all computed before any is stored (an output the memory plan puts in place of an input it
// reads elementwise). Launch and parameters are codegen/ptx's (symElements).

// symConcatFused emits a kernel plan.SymbolicConcat takes that computes more than a copy.
func (md *module) symConcatFused(k plan.Kernel) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	if why := plan.SymbolicConcat(g); why != "" {
		return nil, plan.Launch{}, fmt.Errorf("a kernel concatenating along symbolic sizes computes elementwise ops and views only; %s", why)
	}
	return md.symElements(k, func(kg *kgen, sv *symView, tid, step value.Value) error { // symstride_copy.go
		for _, v := range g.Values {
			for _, e := range plan.SymSizes(v, k.Sizes) {
				if err := sv.valid(e); err != nil {
					return err
				}
			}
		}
		ce := &concatEval{kg: kg, sv: sv}
		for _, group := range plan.SameSizeOutputs(g, k.Sizes) {
			osz := plan.SymSizes(g.Outputs[group[0]].Value, k.Sizes)
			n := kg.size
			if group[0] > 0 {
				count := sym.Const(1)
				for _, e := range osz {
					count = sym.Mul(count, e)
				}
				n = sv.eval(count)
			}
			var err error
			kg.loopTo(tid, step, n, func(i value.Value) {
				x := sv.delinearize(osz, i)
				memo := map[*irg.Value]value.Value{}
				vals := make([]value.Value, len(group))
				for j, oi := range group {
					if vals[j], err = ce.at(g.Outputs[oi].Value, x, memo); err != nil {
						return
					}
				}
				for j, oi := range group {
					kg.store(g.Outputs[oi].Value.Type.DType, kg.outPtr[oi], i, vals[j])
				}
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// concatEval evaluates a value at coordinates at the run's sizes.
type concatEval struct {
	kg *kgen
	sv *symView
}

// at evaluates v at coordinates c; memo holds the values already computed at the same element
// in a block dominating the one being built.
func (ce *concatEval) at(v *irg.Value, c []value.Value, memo map[*irg.Value]value.Value) (value.Value, error) {
	if r, ok := memo[v]; ok {
		return r, nil
	}
	kg := ce.kg
	var r value.Value
	switch {
	case v.Op == irg.OpInput || v.Op == irg.OpParam:
		buf, lin := ce.sv.lin(v, c)
		r = kg.load(v.Type.DType, kg.ptr[buf], lin)
	case v.Op == "constant":
		// A literal tensor's sizes are its own (codegen/ptx's symconcat_fused.go): read at its
		// strides, as the static build reads it.
		r = kg.constant(v, newIndexCoords(v.Type.Shape, c))
	case v.Op == "iota":
		r = kg.cast(irg.I32, c[v.Attrs.Int("dim", 0)], v.Type.DType)
	case v.Op == "transpose" || v.Op == "reshape" || v.Op == "slice" || v.Op == "broadcast_in_dim":
		return ce.at(v.Args[0], ce.sv.operandCoords(v, c), map[*irg.Value]value.Value{})
	case v.Op == "concat":
		var err error
		if r, err = ce.concat(v, c); err != nil {
			return nil, err
		}
	case ops.ClassOf(v.Op) == ops.Elementwise:
		args := make([]value.Value, len(v.Args))
		for i, a := range v.Args {
			x, err := ce.at(a, c, memo)
			if err != nil {
				return nil, err
			}
			args[i] = x
		}
		var err error
		if r, err = kg.elementwise(v, args); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s is not computed beside a concat at symbolic sizes", v.Op)
	}
	memo[v] = r
	return r, nil
}

// concat evaluates concat v at coordinates c: each operand in its own block, from the last,
// taken when c's coordinate along the axis is at least the operand's offset (the operands'
// sizes along the axis before it, at the run), joined in a phi. An operand empty at the run is
// never taken.
func (ce *concatEval) concat(v *irg.Value, c []value.Value) (value.Value, error) {
	kg := ce.kg
	axis := v.Attrs.Int("axis", 0)
	offs := concatOffsets(ce.sv, v) // symconcat.go
	done := kg.block("concat_done")
	var incs []*ir.Incoming
	for j := len(v.Args) - 1; j >= 0; j-- {
		var next *ir.Block
		cj := append([]value.Value(nil), c...)
		if j > 0 {
			in := kg.block("concat_operand")
			next = kg.block("concat_next")
			kg.b.NewCondBr(kg.b.NewICmp(enum.IPredULT, c[axis], offs[j]), next, in)
			kg.b = in
			cj[axis] = kg.sub(c[axis], offs[j])
		}
		// Values computed in a branch hold nothing in another: a fresh memo.
		x, err := ce.at(v.Args[j], cj, map[*irg.Value]value.Value{})
		if err != nil {
			return nil, err
		}
		incs = append(incs, ir.NewIncoming(x, kg.b))
		kg.b.NewBr(done)
		if next != nil {
			kg.b = next
		}
	}
	kg.b = done
	return done.NewPhi(incs...), nil
}
