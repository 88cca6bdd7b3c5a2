package passes

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// attnTol is how far the fused op (rounded once) may be from the decomposition (rounded after
// every op) for values of about 1.
func attnTol(d ir.DType) float64 {
	switch d {
	case ir.F16:
		return 1e-2
	case ir.BF16:
		return 6e-2
	}
	return 1e-5
}

// runBoth evaluates two graphs over the same seeded inputs and compares their outputs.
func runBoth(t *testing.T, want, got *ir.Graph) {
	t.Helper()
	inputs := map[string]*tensor.Tensor{}
	for _, v := range want.Inputs() {
		inputs[v.Name] = tensor.RandomInput(v, 7)
	}
	w, err := ref.Run(want, inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ref.Run(got, inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, wt := range w {
		gt := g[name]
		if !gt.Type.Equal(wt.Type) {
			t.Fatalf("%s: type %s, want %s", name, gt.Type, wt.Type)
		}
		tol := attnTol(wt.Type.DType)
		for i := range wt.F {
			if d := math.Abs(gt.F[i] - wt.F[i]); !(d <= tol*(1+math.Abs(wt.F[i]))) {
				t.Fatalf("%s[%d] = %g, want %g (tolerance %g)", name, i, gt.F[i], wt.F[i], tol)
			}
		}
	}
}

func countOps(g *ir.Graph, op string) int {
	n := 0
	for _, v := range g.Values {
		if v.Op == op {
			n++
		}
	}
	return n
}

// TestFindAttention: the decompositions the DSL writes become one attention op that computes
// what they compute; one whose softmax has another user stays.
func TestFindAttention(t *testing.T) {
	type model func(b *frontend.Builder)
	sdpa := func(d ir.DType, causal bool, shape ...int) model {
		return func(b *frontend.Builder) {
			kv := append([]int(nil), shape...)
			kv[len(kv)-2] += 3
			q, k, v := b.Input("q", d, shape...), b.Input("k", d, kv...), b.Input("v", d, kv...)
			b.Output("o", frontend.ScaledDotProductAttention(q, k, v, causal))
		}
	}
	for _, c := range []struct {
		name  string
		model model
		want  string // the attention op's attributes, "" for no rewrite
	}{
		{"causal f32", sdpa(ir.F32, true, 2, 3, 5, 8), `mask="causal"`},
		{"none f32 rank 3", sdpa(ir.F32, false, 3, 5, 8), `mask="none"`},
		{"causal rank 2", sdpa(ir.F32, true, 6, 4), `mask="causal"`},
		{"causal rank 5", sdpa(ir.F32, true, 2, 2, 2, 4, 8), `mask="causal"`},
		{"causal f16", sdpa(ir.F16, true, 1, 2, 7, 16), `mask="causal"`},
		{"causal bf16", sdpa(ir.BF16, true, 1, 2, 7, 16), `mask="causal"`},
		{"additive, transposed k", func(b *frontend.Builder) {
			q, k, v := b.Input("q", ir.F32, 2, 3, 4, 8), b.Input("k", ir.F32, 2, 3, 6, 8), b.Input("v", ir.F32, 2, 3, 6, 5)
			bias := b.Input("bias", ir.F32, 4, 6)
			s := q.Matmul(k.Transpose(2, 3)).DivScalar(3).Add(bias.Expand(2, 3, 4, 6))
			b.Output("o", s.Softmax(-1).Matmul(v))
		}, "additive"},
		{"query scaled first, k laid out as torch's ONNX export", func(b *frontend.Builder) {
			// [L, B·H, E] projections, as nn.MultiheadAttention's export reshapes them.
			q, k, v := b.Input("q", ir.F32, 5, 6, 8), b.Input("k", ir.F32, 7, 6, 8), b.Input("v", ir.F32, 7, 6, 4)
			s := q.Transpose(0, 1).DivScalar(math.Sqrt(8)).Matmul(k.Permute(1, 2, 0))
			b.Output("o", s.Softmax(-1).Matmul(v.Transpose(0, 1)))
		}, `mask="none"`},
		{"probabilities also an output", func(b *frontend.Builder) {
			q, k, v := b.Input("q", ir.F32, 2, 4, 8), b.Input("k", ir.F32, 2, 4, 8), b.Input("v", ir.F32, 2, 4, 8)
			p := q.Matmul(k.Transpose(1, 2)).Softmax(-1)
			b.Output("o", p.Matmul(v))
			b.Output("p", p)
		}, ""},
		{"softmax over another axis", func(b *frontend.Builder) {
			q, k, v := b.Input("q", ir.F32, 2, 4, 8), b.Input("k", ir.F32, 2, 4, 8), b.Input("v", ir.F32, 2, 4, 8)
			b.Output("o", q.Matmul(k.Transpose(1, 2)).Softmax(1).Matmul(v))
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := frontend.Build("attn", c.model)
			if err != nil {
				t.Fatal(err)
			}
			found := findAttention(g.Clone())
			if err := ops.Verify(found); err != nil {
				t.Fatalf("%v\n%s", err, found)
			}
			n := countOps(found, ops.AttentionOp)
			if c.want == "" {
				if n != 0 {
					t.Fatalf("rewrote a decomposition it must keep:\n%s", found)
				}
				return
			}
			if n != 1 || countOps(found, "reduce_max") != 0 || countOps(found, "dot_general") != 0 {
				t.Fatalf("want one attention op and no scores, have:\n%s", found)
			}
			if !strings.Contains(found.String(), c.want) {
				t.Errorf("attention lacks %s:\n%s", c.want, found)
			}
			runBoth(t, g, found)
		})
	}
}

// TestAttentionOpMatchesDecomposition checks the op's reference semantics against the
// decomposition written with the DSL: grouped KV heads (the decomposition copies them), the
// position mask (pos a runtime input), additive masks broadcast over batch and heads, dtypes.
func TestAttentionOpMatchesDecomposition(t *testing.T) {
	for _, c := range attnCases() {
		t.Run(c.String(), func(t *testing.T) {
			want := c.decomposed(t, false)
			runBoth(t, want, c.fused(t, want, false))
		})
	}
}

// attnCase is one attention of the op's contract, written both ways.
type attnCase struct {
	b, h, kvh, l, s, e, ev int
	mask                   string
	bias                   []int // the additive mask's shape, nil for none
	d                      ir.DType
}

func (c attnCase) String() string {
	return fmt.Sprintf("%s_H%d_KVH%d_L%d_S%d_E%d_%s_bias%v", c.d, c.h, c.kvh, c.l, c.s, c.e, c.mask, c.bias)
}

func attnCases() []attnCase {
	return []attnCase{
		{1, 2, 2, 4, 4, 8, 8, ops.MaskNone, nil, ir.F32},
		{2, 4, 2, 3, 7, 16, 8, ops.MaskCausal, nil, ir.F32},
		{2, 4, 1, 5, 9, 8, 8, ops.MaskPosition, nil, ir.F32},
		{2, 6, 3, 1, 12, 8, 4, ops.MaskPosition, []int{2, 1, 1, 12}, ir.F32},
		{1, 2, 2, 4, 6, 64, 64, ops.MaskCausal, []int{1, 2, 4, 6}, ir.F32},
		{1, 2, 1, 3, 5, 80, 80, ops.MaskNone, nil, ir.F32},
		{1, 1, 1, 3, 5, 96, 96, ops.MaskCausal, nil, ir.F32},
		{1, 2, 2, 3, 5, 128, 128, ops.MaskPosition, nil, ir.F32},
		{2, 4, 2, 5, 8, 16, 16, ops.MaskPosition, []int{1, 4, 5, 8}, ir.F16},
		{2, 4, 2, 5, 8, 16, 16, ops.MaskCausal, nil, ir.BF16},
		{2, 2, 1, 0, 3, 4, 4, ops.MaskNone, []int{1, 2, 0, 3}, ir.F32}, // no queries
	}
}

// decomposed writes the attention with the DSL: grouped KV heads copied to every query head,
// the position mask with pos a runtime input, the additive mask broadcast over batch and heads.
// With loss, the graph also has the output loss = Σ o·r (r an input, the sum in f32).
func (c attnCase) decomposed(t *testing.T, loss bool) *ir.Graph {
	t.Helper()
	scale := 1 / math.Sqrt(float64(c.e))
	g := c.h / c.kvh
	want, err := frontend.Build("decomposed", func(b *frontend.Builder) {
		q := b.Input("q", c.d, c.b, c.h, c.l, c.e)
		k := b.Input("k", c.d, c.b, c.kvh, c.s, c.e)
		v := b.Input("v", c.d, c.b, c.kvh, c.s, c.ev)
		var pos *frontend.Tensor
		if c.mask == ops.MaskPosition {
			pos = b.Input("pos", ir.I64, c.b).WithRange(0, c.s-c.l+1)
		}
		var bias *frontend.Tensor
		if c.bias != nil {
			bias = b.Input("bias", c.d, c.bias...)
		}
		var r *frontend.Tensor
		if loss {
			r = b.Input("r", c.d, c.b, c.h, c.l, c.ev)
		}
		rep := func(x *frontend.Tensor) *frontend.Tensor { // the KV heads copied to every query head
			return x.Unsqueeze(2).Expand(c.b, c.kvh, g, c.s, x.Dim(3)).Reshape(c.b, c.h, c.s, x.Dim(3))
		}
		s := q.Matmul(rep(k).Transpose(2, 3)).MulScalar(scale)
		row, col := b.Iota(ir.I64, 0, c.l, c.s), b.Iota(ir.I64, 1, c.l, c.s)
		switch c.mask {
		case ops.MaskCausal:
			s = s.MaskedFill(col.Gt(row), math.Inf(-1))
		case ops.MaskPosition:
			s = s.MaskedFill(col.Reshape(1, 1, c.l, c.s).Gt(row.Reshape(1, 1, c.l, c.s).Add(pos.Reshape(c.b, 1, 1, 1))), math.Inf(-1))
		}
		if bias != nil {
			s = s.Add(bias)
		}
		o := s.Softmax(-1).Matmul(rep(v))
		b.Output("o", o)
		if loss {
			b.Output("loss", o.Mul(r).Cast(ir.F32).Sum())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// fused is want (decomposed's graph) with the attention written as one attention op.
func (c attnCase) fused(t *testing.T, want *ir.Graph, loss bool) *ir.Graph {
	t.Helper()
	got := ir.NewGraph("fused")
	args := []*ir.Value{}
	var r *ir.Value
	for _, in := range want.Inputs() {
		v := got.Input(in.Name, in.Type, in.Attrs)
		if in.Name == "r" {
			r = v
			continue
		}
		args = append(args, v)
	}
	attrs := ir.Attrs{"scale": 1 / math.Sqrt(float64(c.e)), "mask": c.mask}
	if c.bias != nil {
		attrs["additive"] = true
	}
	ty, err := ops.Infer(ops.AttentionOp, types(args), attrs)
	if err != nil {
		t.Fatal(err)
	}
	o := got.Add(ops.AttentionOp, ty, attrs, args...)
	got.SetOutput("o", o)
	if loss {
		prod := got.Add("mul", o.Type, nil, o, r)
		f32 := got.Add("cast", ir.T(ir.F32, o.Type.Shape...), ir.Attrs{"to": ir.F32}, prod)
		got.SetOutput("loss", got.Add("reduce_sum", ir.T(ir.F32), ir.Attrs{"axes": []int{0, 1, 2, 3}}, f32))
	}
	if err := ops.Verify(got); err != nil {
		t.Fatal(err)
	}
	return got
}

func types(vs []*ir.Value) []ir.Type {
	ts := make([]ir.Type, len(vs))
	for i, v := range vs {
		ts[i] = v.Type
	}
	return ts
}

// TestAttentionStats: bare causal attention of GPT-2 small's shape (12 heads, d = 64) at
// T = 2048 runs as one kernel that moves at most 1.1× the bytes of q, k, v and o, holds no
// [heads, T, T] buffer, and does half the flops of the unmasked kernel.
func TestAttentionStats(t *testing.T) {
	const h, T, d = 12, 2048, 64
	run := func(dt ir.DType, causal bool, disable ...string) *Stats {
		g, err := frontend.Build("attn", func(b *frontend.Builder) {
			q, k, v := b.Input("q", dt, 1, h, T, d), b.Input("k", dt, 1, h, T, d), b.Input("v", dt, 1, h, T, d)
			b.Output("o", frontend.ScaledDotProductAttention(q, k, v, causal))
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(g, Options{DisablePasses: disable})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range res.Kernels.Buffers {
			if b.Type.Shape.NumElements() >= h*T*T {
				t.Errorf("%s buffer %s %s holds the scores", b.Kind, b.Name, b.Type)
			}
		}
		return res.Stats
	}
	for _, dt := range []ir.DType{ir.F16, ir.F32} {
		qkvo := int64(4 * h * T * d * dt.Size())
		causal, full := run(dt, true), run(dt, false)
		if causal.Kernels != 1 || float64(causal.DRAMBytes) > 1.1*float64(qkvo) || causal.ArenaBytes != 0 {
			t.Errorf("%s: %d kernels, %d DRAM bytes (q, k, v, o: %d), arena %d", dt, causal.Kernels, causal.DRAMBytes, qkvo, causal.ArenaBytes)
		}
		if r := float64(causal.Flops) / float64(full.Flops); r < 0.5 || r > 0.51 {
			t.Errorf("%s: causal flops %d, unmasked %d: ratio %.3f, want the half", dt, causal.Flops, full.Flops, r)
		}
		// f16 runs on tensor cores (codegen/ptx's attention_mma.go): 64 query rows per block,
		// bound by the flops at 989 TFLOP/s; f32 on CUDA cores, 4 rows per block, at 67.
		k := causal.PerKernel[0]
		rows, peak := 4, fp32FlopsPerSec
		if dt == ir.F16 {
			rows, peak = 64, halfFlopsPerSec
		}
		want := max(float64(k.ReadBytes+k.WriteBytes)/hbmBytesPerSec, float64(k.Flops)/peak) * 1e6
		if k.Blocks != h*T/rows || math.Abs(k.ModeledTimeUS-want) > 1e-9*want {
			t.Errorf("%s: %d blocks, %.2f µs modeled, want %d and %.2f", dt, k.Blocks, k.ModeledTimeUS, h*T/rows, want)
		}
	}
}

// TestFindCachedAttention: frontend/nn's CachedAttention (the language models' prefill and
// decode over a static cache at a runtime position, grouped KV heads) becomes one attention op
// with a position mask over the ungrouped queries, and computes what the decomposition computes.
func TestFindCachedAttention(t *testing.T) {
	for _, c := range []struct{ b, h, kvh, t, s, d int }{
		{1, 4, 2, 1, 16, 8},  // decode, two query heads per KV head
		{2, 4, 4, 3, 12, 8},  // prefill, multi-head
		{2, 6, 1, 2, 10, 16}, // multi-query
	} {
		t.Run(fmt.Sprintf("B%d_H%d_KVH%d_T%d_S%d", c.b, c.h, c.kvh, c.t, c.s), func(t *testing.T) {
			g, err := frontend.Build("cached", func(b *frontend.Builder) {
				q := b.Input("q", ir.F32, c.b, c.h, c.t, c.d)
				k, v := b.Input("k", ir.F32, c.b, c.kvh, c.t, c.d), b.Input("v", ir.F32, c.b, c.kvh, c.t, c.d)
				kc, vc := b.Input("kc", ir.F32, c.b, c.kvh, c.s, c.d), b.Input("vc", ir.F32, c.b, c.kvh, c.s, c.d)
				pos := b.Input("pos", ir.I64, c.b).WithRange(0, c.s-c.t+1)
				o, kn, vn := nn.CachedAttention(q, k, v, kc, vc, pos)
				b.Output("o", o)
				b.Output("kn", kn)
				b.Output("vn", vn)
			})
			if err != nil {
				t.Fatal(err)
			}
			// As built, and canonicalized as the pipeline runs it first: one query token's row
			// iota is then a zero folded out of the mask (zeroIota), which reads pos alone.
			for _, canon := range []bool{false, true} {
				src := g.Clone()
				if canon {
					src = deadCode(simplify(foldConstants(src)))
				}
				found := findAttention(src)
				if err := ops.Verify(found); err != nil {
					t.Fatalf("canonicalized %v: %v\n%s", canon, err, found)
				}
				if countOps(found, ops.AttentionOp) != 1 || countOps(found, "reduce_max") != 0 || !strings.Contains(found.String(), `mask="position"`) {
					t.Fatalf("canonicalized %v: want one attention op with a position mask:\n%s", canon, found)
				}
				if canon && c.t == 1 && countOps(found, "iota") != 0 {
					t.Fatalf("one query token: an iota is left after canonicalization:\n%s", found)
				}
				runBoth(t, g, found)
			}
		})
	}
}

// TestFormAttentionSymbolic: over a symbolic batch the DSL spells the scale and the mask's −inf
// as broadcasts of scalars (a constant cannot take a symbolic shape), which the attention pass
// takes as it takes their static splats, and the values it adds get their sizes as expressions:
// the graph verifies, and at each batch it computes what the decomposition computes.
func TestFormAttentionSymbolic(t *testing.T) {
	g, err := frontend.Build("attn", func(b *frontend.Builder) {
		n := b.Batch(8)
		x := b.Input("x", ir.F32, n, 5, 8)
		heads := func(name string) *frontend.Tensor {
			return frontend.Linear(x, b.Input(name, ir.F32, 8, 8), nil).Reshape(n, 5, 2, 4).Transpose(1, 2)
		}
		o := frontend.ScaledDotProductAttention(heads("wq"), heads("wk"), heads("wv"), true)
		b.Output("y", o.Transpose(1, 2).Reshape(n, 5, 8))
	}, frontend.WithMaxBatch(8))
	if err != nil {
		t.Fatal(err)
	}
	f := FormAttention(g.Clone())
	if n := countOps(f, ops.AttentionOp); n != 1 {
		t.Fatalf("%d attention ops, want 1:\n%s", n, f)
	}
	for _, v := range f.Values {
		if v.Op == ops.AttentionOp && v.Type.String() != "f32[batch,2,5,4]" {
			t.Errorf("attention's type %s, want f32[batch,2,5,4]", v.Type)
		}
	}
	if err := ops.Verify(f); err != nil {
		t.Fatalf("%v\n%s", err, f)
	}
	for _, n := range []int64{1, 3, 8} {
		want, err := ops.Instantiate(g, map[string]int64{"batch": n})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ops.Instantiate(f, map[string]int64{"batch": n})
		if err != nil {
			t.Fatal(err)
		}
		runBoth(t, want, got)
	}
}
