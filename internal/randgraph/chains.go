package randgraph

import (
	"github.com/gcomp/gcomp/ir"
)

// maxReads is the fusion pass's default bound on the buffers one kernel reads (docs/fusion.md):
// chains that read more are split into kernels there, and the memory plan may place a temp of
// one in place of another.
const maxReads = 16

// inplaceGraph is a long elementwise chain that reads a new input at every step, around the
// fusion reads limit: the chain is cut into kernels, its temps are placed in place of each
// other, and an early temp is read again at the end so that reuse must respect its last reader.
func inplaceGraph(b *builder) {
	dt := b.pick(numeric)
	t := ir.T(dt, b.shape(1+b.r.IntN(2), 6)...)
	t0 := b.op(b.binary(dt), nil, b.input(t), b.input(t))
	t1 := b.op(b.unary(dt), nil, b.input(t))
	s := b.op(b.binary(dt), nil, t0, t1)
	temps := []*ir.Value{t0, t1, s}
	for range maxReads - 4 + b.r.IntN(8) {
		op := "add"
		if b.r.IntN(3) == 0 {
			op = b.binary(dt)
		}
		s = b.op(op, nil, s, b.input(t))
		temps = append(temps, s)
	}
	b.output(s)
	for range 1 + b.r.IntN(2) {
		early := temps[b.r.IntN(min(3, len(temps)))]
		cmp := []string{"lt", "gt", "eq", "ge"}[b.r.IntN(4)]
		b.output(b.op(cmp, nil, early, b.input(t)))
	}
}

// splitGraph has full reductions of 32768 to 40000 elements (the size at which code generation
// splits one over many blocks, docs/codegen.md), the second reading the first's result, and
// their results combined: split reductions feeding each other through their scratch buffers.
func splitGraph(b *builder) {
	dt := b.pick([]ir.DType{ir.F32, ir.F32, ir.F64, ir.I32, ir.I64})
	ops := []string{"reduce_sum", "reduce_max", "reduce_min"}
	full := func(x *ir.Value) *ir.Value {
		return b.op(ops[b.r.IntN(len(ops))], ir.Attrs{"axes": identity(x.Type.Shape.Rank())}, x)
	}
	large := func() ir.Type {
		n := 33000 + b.r.IntN(7001)
		if b.r.IntN(2) == 0 {
			return ir.T(dt, n)
		}
		return ir.T(dt, 8, n/8)
	}
	a := full(b.input(large()))
	x := b.input(large())
	c := b.op(b.binary(dt), nil, full(x), a)
	b.output(c)
	if b.r.IntN(2) == 0 {
		// The second level: a reduction of x against the first results.
		spread := b.op("broadcast_in_dim", ir.Attrs{"dims": []int{}, "shape": []int(x.Type.Shape.Clone())}, c)
		d := full(b.op([]string{"sub", "max", "mul"}[b.r.IntN(3)], nil, x, spread))
		b.output(b.op("add", nil, d, a))
	}
}

// persistentGraph is a chain of at least three small kernels (the persist pass runs such runs in
// one block, values between stages in shared memory): pooling over rows of odd length (30, 7,
// 5), gathers of computed rows, small contractions and row reductions spread back, next to an
// unrelated small value, all in every float dtype.
func persistentGraph(b *builder) {
	dt := b.pick(floats)
	w := []int{30, 7, 5, 15, 3, 30}[b.r.IntN(6)]
	// Up to 3840 elements: enough that a stage takes vector groups of consecutive elements.
	x := b.op("relu", nil, b.view(ir.T(dt, 1+b.r.IntN(4), 4+b.r.IntN(5), 1+b.r.IntN(4), w), 1))
	if b.r.IntN(2) == 0 {
		b.output(b.op("neg", nil, b.input(ir.T(dt, 4))))
	}
	for i := range 3 + b.r.IntN(3) {
		s := x.Type.Shape
		stage := b.r.IntN(4)
		if i == 0 && b.r.IntN(2) == 0 {
			stage = 0 // pooling the first value's rows of odd length
		}
		switch stage {
		case 0: // pooling, as a 4-d [N, C, H, W] value
			if s.Rank() != 4 {
				x = b.op("reshape", ir.Attrs{"shape": []int{1, 1, 1, s.NumElements()}}, x)
				s = x.Type.Shape
			}
			kh, kw := 1+b.r.IntN(min(s[2], 2)), 1+b.r.IntN(min(s[3], 3))
			attrs := ir.Attrs{"kernel": []int{kh, kw}}
			if b.r.IntN(2) == 0 {
				attrs["stride"] = []int{1, 1}
			}
			if b.r.IntN(3) == 0 {
				attrs["padding"] = []int{kh / 2, kw / 2}
			}
			op := "max_pool2d"
			if b.r.IntN(2) == 0 {
				op = "avg_pool2d"
			}
			x = b.op(op, attrs, x)
		case 1: // a gather of computed rows
			rows := s[0]
			table := b.op("reshape", ir.Attrs{"shape": []int{rows, s.NumElements() / rows}}, x)
			idx := b.rangedInput(ir.T(ir.I32, 1+b.r.IntN(5)), 0, rows)
			x = b.op("neg", nil, b.op("gather", nil, table, idx))
		case 2: // a small contraction over the last dim
			k := s[s.Rank()-1]
			w := b.param(ir.T(dt, 1+b.r.IntN(9), k))
			x = b.op("tanh", nil, b.op("dot_general", ir.Attrs{"lhs_contract": []int{s.Rank() - 1}, "rhs_contract": []int{1}}, x, w))
		default: // a row reduction spread back
			last := s.Rank() - 1
			m := b.op("reduce_max", ir.Attrs{"axes": []int{last}, "keepdims": true}, x)
			x = b.op("sub", nil, x, b.op("broadcast_in_dim", ir.Attrs{"dims": identity(s.Rank()), "shape": []int(s.Clone())}, m))
		}
		if b.r.IntN(4) == 0 {
			b.output(x)
		}
	}
	b.output(x)
}
