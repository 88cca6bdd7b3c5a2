package ptx

import "github.com/gcomp/gcomp/ir"

// The direct contraction template: the fallback for the dot_generals and conv2ds the tiled
// templates do not take — f64 and integer operands, operands computed inside the kernel
// (constants, elementwise producers, views a copy cannot address), 16-bit operands without a
// contiguous dim. One thread per output element (grid-stride) folds its K products in ascending
// contraction order, evaluating each operand element through the kernel graph at its index, and
// runs the epilogue on the result before its one store. Floats accumulate in f64 from +0 (the
// products of f32, f16 and bf16 are exact there), the reference's own order and precision, so
// results are bit-identical to it; integers wrap in 64 bits and wrap again to the dtype, as the
// reference does. Correct rather than fast: no operand reuse between threads.
func directKernel(k Kernel, dot *ir.Value, why string, globals *[]string) (string, Launch, error) {
	n := dot.Type.Shape.NumElements()
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	b.note("direct %s (%s): one thread per result element", dot.Op, why)
	end, work, err := symDirect(k, gn, b, &args, dot) // symdirect.go
	if err != nil {
		return "", Launch{}, err
	}
	tid, nthreads := globalThread(b)
	gn.directElements(dot, tid, nthreads, end, false)
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	l := Launch{Grid: [3]int{max(1, min(ceilDiv(n, loopBlock), maxLoopBlocks)), 1, 1}, Block: [3]int{loopBlock, 1, 1}, Params: args, Work: work}
	return b.text(), l, nil
}

// directElements computes result elements start, start+step, ... of dot (grid-stride or
// block-stride) and stores every output of the kernel graph at each. With fmaF32, a product of
// f32 operands into f32 accumulates with fma.rn.f32 (as the tiled FFMA template does, within
// the f32 tolerance) instead of exactly in f64, which runs at 1/64 of the f32 rate on sm_86 and
// sm_89.
func (gn *gen) directElements(dot *ir.Value, start, step, end string, fmaF32 bool) {
	b, a := gn.e.b, gn.a
	shape := dot.Type.Shape
	if end == "" {
		end = imm(shape.NumElements())
	}
	accT := accType(dot, fmaF32)
	gn.loopTo(start, step, end, func(o string) error {
		x := newIndexLin(shape, o)
		for d := range shape {
			x.getCoord(a, d) // derived outside the k loop, whose registers do not outlive it
		}
		acc := b.reg(classOf(accT))
		gn.accMove(acc, gn.e.constVal(accT, 0))
		var term func(kk string) (val, val, error)
		K := 1
		if dot.Op == "conv2d" {
			term, K = gn.convTerm(dot, x)
		} else {
			term, K = gn.dotTerm(dot, x)
		}
		gn.loopTo("0", "1", gn.tapsEnd(K), func(kk string) error {
			u, v, err := term(kk)
			if err != nil {
				return err
			}
			return gn.fold(val{accT, acc}, u, v)
		})
		res := gn.e.cast(val{accT, acc}, dot.Type.DType)
		gn.bound[dot] = func(*index) val { return res }
		defer delete(gn.bound, dot)
		return gn.storeOutputs(allOutputs(gn.kernelGraph), x)
	})
}

// fold adds the product u·v to the accumulator register acc: fma.rn.f32 into an f32
// accumulator, else both operands converted to the accumulator's type, multiplied and added.
func (gn *gen) fold(acc, u, v val) error {
	if acc.dt == ir.F32 {
		gn.e.b.ins("fma.rn.f32", acc.r, gn.e.reg(u), gn.e.reg(v), acc.r)
		return nil
	}
	p, err := gn.e.binary("mul", gn.e.cast(u, acc.dt), gn.e.cast(v, acc.dt))
	if err != nil {
		return err
	}
	s, err := gn.e.binary("add", acc, p)
	if err != nil {
		return err
	}
	gn.accMove(acc.r, s)
	return nil
}

func allOutputs(g *ir.Graph) []int {
	outs := make([]int, len(g.Outputs))
	for i := range outs {
		outs[i] = i
	}
	return outs
}

// dotTerm returns the operand elements of the k-th product of dot_general result element x (k
// over the contracting dims, row-major in lhs_contract order) and K.
func (gn *gen) dotTerm(dot *ir.Value, x *index) (func(k string) (val, val, error), int) {
	lhsAt, rhsAt, ks := gn.dotOperands(dot, x)
	return func(k string) (val, val, error) {
		kx := newIndexLin(ks, k)
		u, err := lhsAt(kx)
		if err != nil {
			return val{}, val{}, err
		}
		v, err := rhsAt(kx)
		return u, v, err
	}, ks.NumElements()
}

// dotOperands returns evaluators of the lhs and rhs elements of dot_general result element x at
// contraction index kx, and the shape of the contracting dims (in lhs_contract order).
func (gn *gen) dotOperands(dot *ir.Value, x *index) (lhsAt, rhsAt func(kx *index) (val, error), ks ir.Shape) {
	a := gn.a
	lhs, rhs := dot.Args[0], dot.Args[1]
	lb, rb := dot.Attrs.Ints("lhs_batch"), dot.Attrs.Ints("rhs_batch")
	lc, rc := dot.Attrs.Ints("lhs_contract"), dot.Attrs.Ints("rhs_contract")
	for _, d := range lc {
		ks = append(ks, lhs.Type.Shape[d])
	}
	// coords places the result's batch dims, then this operand's free dims (starting at result
	// dim free0), and the contraction index kx into the operand's coordinates.
	coords := func(op *ir.Value, batch, contract []int, free0 int, kx *index) *index {
		c := make([]string, op.Type.Shape.Rank())
		for i, d := range batch {
			c[d] = x.getCoord(a, i)
		}
		for i, d := range contract {
			c[d] = kx.getCoord(a, i)
		}
		f := free0
		for d := range c {
			if c[d] == "" {
				c[d] = x.getCoord(a, f)
				f++
			}
		}
		return newIndexCoords(op.Type.Shape, c)
	}
	lhsFree := lhs.Type.Shape.Rank() - len(lb) - len(lc)
	lhsAt = func(kx *index) (val, error) { return gn.eval(lhs, coords(lhs, lb, lc, len(lb), kx)) }
	rhsAt = func(kx *index) (val, error) { return gn.eval(rhs, coords(rhs, rb, rc, len(lb)+lhsFree, kx)) }
	return lhsAt, rhsAt, ks
}

// convTerm returns the operand elements of the k-th product of conv2d result element x =
// (n, o, oh, ow), k over (c, kh, kw) of the group's channels row-major, and K. Taps in the
// padding multiply a zero, as the reference's zero-padded im2col does.
func (gn *gen) convTerm(v *ir.Value, x *index) (func(k string) (val, val, error), int) {
	a := gn.a
	img, wt := v.Args[0], v.Args[1]
	xs, ws := img.Type.Shape, wt.Type.Shape
	stride, pad, dil, groups := ConvGeometry(v)
	c, kh, kw := ws[1], ws[2], ws[3]
	og := ws[0] / groups
	nIdx, o := x.getCoord(a, 0), x.getCoord(a, 1)
	ih0 := a.sub(a.mul(x.getCoord(a, 2), stride[0]), imm(pad[0]))
	iw0 := a.sub(a.mul(x.getCoord(a, 3), stride[1]), imm(pad[1]))
	cBase := a.mul(a.div(o, og), c)
	return func(k string) (val, val, error) {
		kx := newIndexLin(ir.Shape{c, kh, kw}, k)
		ci, ki, kj := kx.getCoord(a, 0), kx.getCoord(a, 1), kx.getCoord(a, 2)
		ih, iw := a.add(ih0, a.mul(ki, dil[0])), a.add(iw0, a.mul(kj, dil[1]))
		ok := gn.e.b.reg(rPred)
		gn.e.b.ins("and.pred", ok, gn.inRange(ih, xs[2]), gn.inRange(iw, xs[3]))
		xv, err := gn.eval(img, newIndexCoords(xs, []string{nIdx, a.add(cBase, ci), a.clamp(ih, xs[2]), a.clamp(iw, xs[3])}))
		if err != nil {
			return val{}, val{}, err
		}
		xv = gn.e.selectVal(val{ir.Bool, ok}, xv, gn.e.constVal(img.Type.DType, 0))
		wv, err := gn.eval(wt, newIndexCoords(ws, []string{o, ci, ki, kj}))
		return xv, wv, err
	}, c * kh * kw
}
