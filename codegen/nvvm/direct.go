package nvvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// directKernel is codegen/ptx's direct contraction template (plan.ContractionPlan "direct"): one
// thread per result element (grid-stride) folds its K products in ascending contraction order,
// each operand element evaluated through the kernel graph at its index, in f64 for floats (the
// products of f32, f16 and bf16 are exact there) and i64 for integers, the reference's order
// and precision; the epilogue runs on the result before its one store.
func (md *module) directKernel(k plan.Kernel, c plan.Contraction) (*ir.Func, plan.Launch, error) {
	args, work, err := symDirect(k, c)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	kg := md.newKernel(k, args)
	if plan.ConvFolds(k, c.Dot) { // its size is the taps (symconv.go)
		kg.foldK = kg.size
	}
	tid := kg.add(kg.b.NewMul(kg.sreg("ctaid.x"), kg.sreg("ntid.x")), kg.sreg("tid.x"))
	step := kg.b.NewMul(kg.sreg("nctaid.x"), kg.sreg("ntid.x"))
	err = kg.directElements(c.Dot, tid, step, false)
	kg.b.NewRet(nil)
	if err != nil {
		return nil, plan.Launch{}, err
	}
	return kg.f, plan.Launch{Grid: c.Grid, Block: c.Block, Params: args, Work: work}, nil
}

// directElements computes result elements start, start+step, ... of dot and stores every
// output of the kernel graph at each. With fmaF32 a product of f32 operands into f32 accumulates
// with an fma in f32 (plan.AccType), as codegen/ptx's persistent stages do.
func (kg *kgen) directElements(dot *irg.Value, start, step value.Value, fmaF32 bool) error {
	return kg.directElementsTo(dot, start, step, fmaF32, allOutputs(kg.g))
}

// directElementsTo is directElements storing the kernel's outputs outs (at dot's index) only.
func (kg *kgen) directElementsTo(dot *irg.Value, start, step value.Value, fmaF32 bool, outs []int) error {
	shape := dot.Type.Shape
	accT := plan.AccType(dot, fmaF32)
	acc := kg.alloca(regType(accT))
	var err error
	keep := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	kg.loopTo(start, step, kg.units(shape.NumElements()), func(o value.Value) {
		x := newIndexLin(shape, o)
		for d := range shape {
			kg.coord(x, d) // derived outside the k loop, whose values do not outlive it
		}
		kg.b.NewStore(constVal(accT, 0), acc)
		var term func(kk value.Value) (value.Value, value.Value, error)
		K := 1
		if dot.Op == "conv2d" {
			term, K = kg.convTerm(dot, x)
		} else {
			term, K = kg.dotTerm(dot, x)
		}
		kg.loopTo(ci(0), ci(1), kg.tapsEnd(K), func(kk value.Value) {
			u, v, e := term(kk)
			if e == nil {
				e = kg.foldProduct(dot, accT, acc, u, v)
			}
			keep(e)
		})
		kg.bound = map[*irg.Value]value.Value{dot: kg.cast(accT, kg.b.NewLoad(regType(accT), acc), dot.Type.DType)}
		keep(kg.storeOutputs(outs, x))
		kg.bound = nil
	})
	return err
}

// dotTerm returns the operand elements of the k-th product of dot_general result element x (k
// over the contracting dims, row-major in lhs_contract order) and K: the result's batch dims,
// then each operand's free dims, placed into the operand's coordinates.
func (kg *kgen) dotTerm(dot *irg.Value, x *index) (func(k value.Value) (value.Value, value.Value, error), int) {
	lhs, rhs := dot.Args[0], dot.Args[1]
	lb, rb := dot.Attrs.Ints("lhs_batch"), dot.Attrs.Ints("rhs_batch")
	lc, rc := dot.Attrs.Ints("lhs_contract"), dot.Attrs.Ints("rhs_contract")
	var ks irg.Shape
	for _, d := range lc {
		ks = append(ks, lhs.Type.Shape[d])
	}
	coords := func(op *irg.Value, batch, contract []int, free0 int, kx *index) *index {
		c := make([]value.Value, op.Type.Shape.Rank())
		for i, d := range batch {
			c[d] = kg.coord(x, i)
		}
		for i, d := range contract {
			c[d] = kg.coord(kx, i)
		}
		f := free0
		for d := range c {
			if c[d] == nil {
				c[d] = kg.coord(x, f)
				f++
			}
		}
		return newIndexCoords(op.Type.Shape, c)
	}
	lhsFree := lhs.Type.Shape.Rank() - len(lb) - len(lc)
	return func(k value.Value) (value.Value, value.Value, error) {
		kx := newIndexLin(ks, k)
		u, err := kg.eval(lhs, coords(lhs, lb, lc, len(lb), kx))
		if err != nil {
			return nil, nil, err
		}
		v, err := kg.eval(rhs, coords(rhs, rb, rc, len(lb)+lhsFree, kx))
		return u, v, err
	}, ks.NumElements()
}

// convTerm returns the operand elements of the k-th product of conv2d result element x =
// (n, o, oh, ow), k over (c, kh, kw) of the group's channels row-major, and K. Taps in the
// padding multiply a zero, as the reference's zero-padded im2col does.
func (kg *kgen) convTerm(v *irg.Value, x *index) (func(k value.Value) (value.Value, value.Value, error), int) {
	img, wt := v.Args[0], v.Args[1]
	xs, ws := img.Type.Shape, wt.Type.Shape
	stride, pad, dil, groups := plan.ConvGeometry(v)
	c, kh, kw := ws[1], ws[2], ws[3]
	og := ws[0] / groups
	n, o := kg.coord(x, 0), kg.coord(x, 1)
	ih0 := kg.sub(kg.mul(kg.coord(x, 2), stride[0]), ci(pad[0]))
	iw0 := kg.sub(kg.mul(kg.coord(x, 3), stride[1]), ci(pad[1]))
	cBase := kg.mul(kg.div(o, og), c)
	return func(k value.Value) (value.Value, value.Value, error) {
		kx := newIndexLin(irg.Shape{c, kh, kw}, k)
		cc, ki, kj := kg.coord(kx, 0), kg.coord(kx, 1), kg.coord(kx, 2)
		ih, iw := kg.add(ih0, kg.mul(ki, dil[0])), kg.add(iw0, kg.mul(kj, dil[1]))
		ok := kg.b.NewAnd(kg.inRange(ih, xs[2]), kg.inRange(iw, xs[3]))
		xv, err := kg.eval(img, newIndexCoords(xs, []value.Value{n, kg.add(cBase, cc), kg.clamp(ih, xs[2]), kg.clamp(iw, xs[3])}))
		if err != nil {
			return nil, nil, err
		}
		xv = kg.b.NewSelect(ok, xv, constVal(img.Type.DType, 0))
		wv, err := kg.eval(wt, newIndexCoords(ws, []value.Value{o, cc, ki, kj}))
		return xv, wv, err
	}, c * kh * kw
}
