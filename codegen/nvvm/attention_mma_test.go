package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/sim"
)

// TestAttentionMMA runs codegen/ptx's tensor-core attention table through the NVVM producer
// (checkOwnAttention: its own entry, ptxas sm_80 and sm_90 without spills, the reference, bit for
// bit codegen/ptx's): f16 and bf16, head dims 64, 80, 96 and 128, multi-head, grouped and
// multi-query KV heads, L and S multiples of the 64-row and 64-key tiles and not, L ≠ S under a
// position mask (rows that see no key are NaN), additive bias broadcast over batch or heads;
// scales folded into the exponent and not (zero, negative, so small the bias's 1/scale would
// overflow); an i64 position past the int32 range.
func TestAttentionMMA(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		attnCase
		attrs ir.Attrs // replacing the graph's (scale)
		pos64 bool
	}{
		{attnCase: attnCase{1, 1, 1, 64, 64, 64, 64, ops.MaskNone, nil, nil, ir.F16}},
		{attnCase: attnCase{1, 2, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F16}},
		{attnCase: attnCase{2, 4, 2, 33, 100, 80, 80, ops.MaskNone, nil, nil, ir.F16}},
		{attnCase: attnCase{1, 3, 1, 130, 130, 96, 96, ops.MaskCausal, nil, nil, ir.BF16}},
		{attnCase: attnCase{1, 2, 1, 20, 64, 128, 128, ops.MaskCausal, nil, nil, ir.BF16}},
		{attnCase: attnCase{2, 2, 1, 16, 90, 64, 64, ops.MaskPosition, nil, []int64{70, -20}, ir.F16}},
		{attnCase: attnCase{1, 2, 2, 24, 150, 128, 64, ops.MaskPosition, nil, []int64{100}, ir.BF16}},
		{attnCase: attnCase{2, 2, 2, 40, 72, 64, 64, ops.MaskNone, []int{2, 1, 40, 72}, nil, ir.F16}},
		{attnCase: attnCase{1, 4, 2, 65, 65, 80, 80, ops.MaskCausal, []int{1, 4, 65, 65}, nil, ir.BF16}},
		{attnCase: attnCase{1, 2, 1, 18, 40, 96, 96, ops.MaskPosition, []int{1, 2, 18, 40}, []int64{15}, ir.F16}},
		{attnCase: attnCase{1, 2, 2, 16, 20, 16, 32, ops.MaskNone, nil, nil, ir.F16}}, // E = 16: one k step
		{attnCase: attnCase{1, 2, 2, 30, 70, 64, 64, ops.MaskCausal, []int{1, 1, 30, 70}, nil, ir.F16}, attrs: ir.Attrs{"scale": -0.2}},
		{attnCase: attnCase{1, 1, 1, 17, 33, 64, 64, ops.MaskNone, nil, nil, ir.BF16}, attrs: ir.Attrs{"scale": 0.0}},
		{attnCase: attnCase{1, 1, 1, 17, 33, 64, 64, ops.MaskNone, nil, nil, ir.F16}, attrs: ir.Attrs{"scale": 0.5}},
		{attnCase: attnCase{1, 1, 1, 17, 33, 64, 64, ops.MaskNone, []int{1, 1, 17, 33}, nil, ir.F16}, attrs: ir.Attrs{"scale": 1e-39}},
		{attnCase: attnCase{3, 2, 1, 20, 70, 64, 64, ops.MaskPosition, nil, []int64{40, 1 << 40, -(1 << 40)}, ir.F16}, pos64: true},
	} {
		name := c.String()
		if c.attrs != nil {
			name += fmt.Sprintf("_scale%g", c.attrs["scale"])
		}
		if c.pos64 {
			name += "_pos64"
		}
		t.Run(name, func(t *testing.T) {
			g := c.graphWith(t, c.attrs, c.pos64)
			if !attnmma.Fits(g.Outputs[0].Value) {
				t.Fatal("not the tensor-core template's")
			}
			in := inputsFor(g, 5)
			if c.pos != nil {
				copy(in["pos"].I, c.pos)
			}
			text, _ := checkOwnAttention(t, p, g, in)
			for _, s := range []string{"mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned.m8n8.x4.trans", "cp.async"} {
				if !strings.Contains(text, s) {
					t.Errorf("the kernel has no %s", s)
				}
			}
		})
	}
}

// graphWith is the case's graph with the attention's attrs replaced by attrs' and, if pos64,
// an i64 position.
func (c attnCase) graphWith(t *testing.T, attrs ir.Attrs, pos64 bool) *ir.Graph {
	t.Helper()
	g := c.graph(t)
	att := g.Outputs[0].Value
	for k, v := range attrs {
		att.Attrs[k] = v
	}
	if pos64 {
		att.Args[3].Type.DType = ir.I64
	}
	return g
}

// TestAttentionMMAStrided: q, k and v read in place through views (heads split out of a fused
// qkv buffer's rows, a KV head broadcast to every query head, a bias broadcast over heads); the
// row stride and the views' offset decide the copies, as codegen/ptx's: 16-byte cp.async where
// both are multiples of 8 elements, 4-byte ones where they are even, element copies otherwise
// (Q's fragments then load element by element too).
func TestAttentionMMAStrided(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		start int
		copy  string // an instruction of the K/V copies
	}{{0, "cp.async.cg.shared.global"}, {2, "cp.async.ca.shared.global"}, {1, "st.shared.u16"}} {
		t.Run(fmt.Sprintf("start%d", c.start), func(t *testing.T) {
			g := stridedGraph(t, ir.F16, c.start)
			text, _ := checkOwnAttention(t, p, g, inputsFor(g, 5))
			if !strings.Contains(text, "mma.sync") || !strings.Contains(text, c.copy) {
				t.Errorf("want mma.sync and K/V copies by %s", c.copy)
			}
		})
	}
}

// TestAttentionMMAIdleWarps: a block's warps whose 16 rows all lie past L issue no mma: at
// L = 16, S = 64, d = 64 only the first warp's 32 + 32 products of the one tile run.
func TestAttentionMMAIdleWarps(t *testing.T) {
	p := requireProducer(t)
	g := attnCase{1, 1, 1, 16, 64, 64, 64, ops.MaskNone, nil, nil, ir.F16}.graph(t)
	if _, st := checkOwnAttention(t, p, g, inputsFor(g, 1)); st.Classes[sim.ClassTensor] != 64 {
		t.Errorf("%d mma issued, want 64", st.Classes[sim.ClassTensor])
	}
}

// TestAttentionMMASkipsHiddenTiles: a causal kernel loads no tile past its block's last visible
// key and its warps skip the products of tiles they do not see: at L = S = 512 it executes about
// as large a share of the unmasked kernel's instructions as the 36 of 64 tiles its blocks load
// (codegen/ptx's bound).
func TestAttentionMMASkipsHiddenTiles(t *testing.T) {
	p := requireProducer(t)
	count := func(mask string) int64 {
		g := attnCase{1, 1, 1, 512, 512, 64, 64, mask, nil, nil, ir.F16}.graph(t)
		k := plan.Kernel{Name: "k0_attention", Graph: g}
		text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		_, st := run(t, text, k, launches[0], inputsFor(g, 1))
		return st.WarpInsts
	}
	causal, full := count(ops.MaskCausal), count(ops.MaskNone)
	t.Logf("warp instructions at L = S = 512: causal %d, unmasked %d", causal, full)
	if r := float64(causal) / float64(full); r > 0.65 {
		t.Errorf("causal attention executes %d instructions, unmasked %d: ratio %.2f, want at most 0.65", causal, full, r)
	}
}

// stridedGraph is causal attention of dtype d reading q, k and v in place through views: q and v
// heads of a fused [b, l, start+2·h·e] buffer's rows from column start, one KV head of a
// [b, l, start+e] buffer from column start broadcast to every query head, and a bias [l, l]
// broadcast over heads.
func stridedGraph(t *testing.T, d ir.DType, start int) *ir.Graph {
	t.Helper()
	const b, l, h, e = 2, 20, 2, 64
	g := ir.NewGraph("strided")
	add := func(op string, attrs ir.Attrs, args ...*ir.Value) *ir.Value {
		ts := make([]ir.Type, len(args))
		for i, a := range args {
			ts[i] = a.Type
		}
		ty, err := ops.Infer(op, ts, attrs)
		if err != nil {
			t.Fatal(err)
		}
		return g.Add(op, ty, attrs, args...)
	}
	qv := g.Input("qv", ir.T(d, b, l, start+2*h*e), nil)
	kin := g.Input("k", ir.T(d, b, l, start+e), nil)
	bias := g.Input("bias", ir.T(d, l, l), nil)
	heads := func(lo int) *ir.Value {
		x := add("slice", ir.Attrs{"start": []int{0, 0, lo}, "limit": []int{b, l, lo + h*e}}, qv)
		return add("transpose", ir.Attrs{"perm": []int{0, 2, 1, 3}}, add("reshape", ir.Attrs{"shape": []int{b, l, h, e}}, x))
	}
	k := add("slice", ir.Attrs{"start": []int{0, 0, start}, "limit": []int{b, l, start + e}}, kin)
	k = add("broadcast_in_dim", ir.Attrs{"dims": []int{0, 1, 2, 3}, "shape": []int{b, h, l, e}}, add("reshape", ir.Attrs{"shape": []int{b, 1, l, e}}, k))
	bb := add("broadcast_in_dim", ir.Attrs{"dims": []int{2, 3}, "shape": []int{1, h, l, l}}, bias)
	g.SetOutput("o", add(ops.AttentionOp, ir.Attrs{"scale": 0.125, "mask": ops.MaskCausal, "additive": true}, heads(start), k, heads(start+h*e), bb))
	return g
}
