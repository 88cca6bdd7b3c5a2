package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
)

// A concat along a symbolic dim fused with computation (a decoder's present_k = concat(past_k,
// rope(k)), a cast of the step's row before it, tanh or a scale after it): the loop template's
// index arithmetic is the bound's, wrong at other sizes once the concat's operands' rows differ,
// so this template evaluates each output element at the run's sizes. One thread per element of a
// grid-stride loop delinearizes it over the output's sizes at the run and evaluates the graph
// there: elementwise ops compute in registers as the loop template's do (the same instructions,
// so the values are the static build's bit for bit), views map the coordinates to their
// operand's at the run's sizes (symview.go), inputs load at their linear index at the run, a
// literal tensor at its own (static) strides, and a
// concat branches to the operand whose offset along its axis is the last at most the coordinate
// (as the concat copy does, symconcat.go), evaluates it there and joins the branches in one
// register. Outputs of the same sizes share a loop, all computed before any is stored (an output
// the memory plan puts in place of an input it reads elementwise).

// symConcatFused emits a kernel SymbolicConcat takes that computes more than a copy.
func symConcatFused(k Kernel, globals *[]string) (string, Launch, error) {
	g := k.Graph
	out := g.Outputs[0].Value
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	sv := &symView{dims: symViewLoad(k, b, &args, k.Sizes), sizes: k.Sizes}
	for _, v := range live(g) {
		for _, e := range SymSizes(v, k.Sizes) {
			if _, err := symEval(func() string { return b.reg(rU32) }, func(string, ...string) {}, sv.dims, e); err != nil {
				return "", Launch{}, err
			}
		}
	}
	n, scale, err := symSize(k, b, &args, out.Type.Shape.NumElements(), "element count")
	if err != nil {
		return "", Launch{}, err
	}
	tid, nthreads := globalThread(b)
	ce := &concatEval{gn: gn, sv: sv}
	for _, group := range plan.SameSizeOutputs(g, k.Sizes) {
		osz := SymSizes(g.Outputs[group[0]].Value, k.Sizes)
		if group[0] > 0 {
			count := sym.Const(1)
			for _, e := range osz {
				count = sym.Mul(count, e)
			}
			n = sv.eval(b, count)
		}
		for _, oi := range group {
			b.note("output %s", g.Outputs[oi].Name)
		}
		gn.loopTo(tid, nthreads, n, func(i string) error {
			x := sv.delinearize(b, osz, i)
			memo := map[*ir.Value]val{}
			vals := make([]val, len(group))
			for j, oi := range group {
				v, err := ce.at(g.Outputs[oi].Value, x, memo)
				if err != nil {
					return err
				}
				vals[j] = v
			}
			for j, oi := range group {
				gn.store(g.Outputs[oi].Value, gn.outPtr[oi], i, vals[j])
			}
			return nil
		})
	}
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	w := SymWork{Vector: 1, Block: loopBlock, MaxBlocks: maxLoopBlocks, Scale: scale}
	l := Launch{Grid: [3]int{w.Grid(int64(out.Type.Shape.NumElements())), 1, 1}, Block: [3]int{loopBlock, 1, 1}, Params: args, Work: &w}
	return b.text(), l, nil
}

// concatEval evaluates a value at coordinates at the run's sizes.
type concatEval struct {
	gn *gen
	sv *symView
}

// at evaluates v at coordinates c; memo holds the values already computed at the same element
// in the same branch.
func (ce *concatEval) at(v *ir.Value, c []string, memo map[*ir.Value]val) (val, error) {
	if r, ok := memo[v]; ok {
		return r, nil
	}
	gn, b := ce.gn, ce.gn.e.b
	var r val
	switch {
	case v.Op == ir.OpInput || v.Op == ir.OpParam:
		buf, lin := ce.sv.lin(b, v, c)
		r = gn.load(buf, lin)
	case v.Op == "constant":
		// A literal tensor's sizes are its own, static at every run (only the other operands of a
		// concat follow the sizes): its element at c is read at its own strides, as the static
		// build reads it (a module-level array; a splat is an immediate).
		var err error
		if r, err = gn.constant(v, newIndexCoords(v.Type.Shape, c)); err != nil {
			return val{}, err
		}
	case v.Op == "iota":
		r = gn.e.cast(val{ir.I32, c[v.Attrs.Int("dim", 0)]}, v.Type.DType)
	case v.Op == "transpose" || v.Op == "reshape" || v.Op == "slice" || v.Op == "broadcast_in_dim":
		return ce.at(v.Args[0], ce.sv.operandCoords(b, v, c), map[*ir.Value]val{})
	case v.Op == "concat":
		var err error
		if r, err = ce.concat(v, c); err != nil {
			return val{}, err
		}
	case ops.ClassOf(v.Op) == ops.Elementwise:
		args := make([]val, len(v.Args))
		for i, a := range v.Args {
			x, err := ce.at(a, c, memo)
			if err != nil {
				return val{}, err
			}
			args[i] = x
		}
		var err error
		switch len(args) {
		case 1:
			r, err = gn.e.unary(v.Op, args[0], v.Type.DType, v.Attrs)
		case 2:
			r, err = gn.e.binary(v.Op, args[0], args[1])
		case 3:
			if v.Op != "select" {
				return val{}, fmt.Errorf("%s is not supported by the PTX code generator", v.Op)
			}
			r = gn.e.selectVal(args[0], args[1], args[2])
		}
		if err != nil {
			return val{}, err
		}
	default:
		return val{}, fmt.Errorf("%s is not computed beside a concat at symbolic sizes", v.Op)
	}
	memo[v] = r
	return r, nil
}

// concat evaluates concat v at coordinates c: each operand in its own branch, from the last,
// taken when c's coordinate along the axis is at least the operand's offset, joined in one
// register.
func (ce *concatEval) concat(v *ir.Value, c []string) (val, error) {
	gn, b, sv := ce.gn, ce.gn.e.b, ce.sv
	axis := v.Attrs.Int("axis", 0)
	offs := concatOffsets(b, sv, v) // symconcat.go
	cls := classOf(v.Type.DType)
	res := b.reg(cls)
	err := concatBranches(b, c, axis, offs, func(j int, cj []string) error { // symconcat.go
		// Registers computed in a branch hold nothing in another: the generator's per-element
		// caches start and end empty around it.
		gn.reset()
		x, err := ce.at(v.Args[j], cj, map[*ir.Value]val{})
		if err != nil {
			return err
		}
		b.ins("mov."+regDecl[cls].typ, res, gn.e.reg(x))
		gn.reset()
		return nil
	})
	if err != nil {
		return val{}, err
	}
	return val{v.Type.DType, res}, nil
}
