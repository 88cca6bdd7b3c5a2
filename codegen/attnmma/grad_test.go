package attnmma

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// attentionGrad is attention_grad (wrt, with its lse operand) of q [b,4,l,e], k [b,2,s,e],
// v [b,2,s,ev] under mask (a position operand for the position mask), with a bias if bias is
// set; doT reads do as a transpose.
func attentionGrad(t *testing.T, d ir.DType, b, l, s, e, ev int, mask, wrt string, bias, doT bool) *ir.Value {
	t.Helper()
	g := ir.NewGraph("grad")
	args := []*ir.Value{g.Input("q", ir.T(d, b, 4, l, e), nil), g.Input("k", ir.T(d, b, 2, s, e), nil), g.Input("v", ir.T(d, b, 2, s, ev), nil)}
	attrs := ir.Attrs{"scale": 0.125, "mask": mask, "wrt": wrt, "lse": true}
	if mask == ops.MaskPosition {
		args = append(args, g.Input("pos", ir.T(ir.I32, b), nil))
	}
	if bias {
		args = append(args, g.Input("bias", ir.T(d, 1, 4, l, s), nil))
		attrs["additive"] = true
	}
	do := g.Input("do", ir.T(d, b, 4, l, ev), nil)
	if doT {
		dt := g.Input("dot", ir.T(d, b, 4, ev, l), nil)
		do = g.Add("transpose", ir.T(d, b, 4, l, ev), ir.Attrs{"perm": []int{0, 1, 3, 2}}, dt)
	}
	args = append(args, g.Input("o", ir.T(d, b, 4, l, ev), nil), do, g.Input("lse", ir.T(ir.F32, b, 4, l), nil))
	ts := make([]ir.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type
	}
	ty, err := ops.Infer(ops.AttentionGradOp, ts, attrs)
	if err != nil {
		t.Fatal(err)
	}
	return g.Add(ops.AttentionGradOp, ty, attrs, args...)
}

func TestFitsGrad(t *testing.T) {
	for _, c := range []struct {
		name           string
		d              ir.DType
		b, l, s, e, ev int
		mask, wrt      string
		bias, doT      bool
		want           bool
		blocks         int
	}{
		{"dk f16", ir.F16, 2, 70, 130, 64, 64, ops.MaskCausal, "k", false, false, true, 2 * 2 * 3},
		{"dv bf16", ir.BF16, 1, 5, 64, 16, 32, ops.MaskNone, "v", false, false, true, 2},
		{"no rows", ir.F16, 1, 0, 10, 64, 64, ops.MaskNone, "k", false, false, true, 2},
		{"dq", ir.F16, 1, 64, 64, 64, 64, ops.MaskNone, "q", false, false, false, 0},
		{"f32", ir.F32, 1, 64, 64, 64, 64, ops.MaskNone, "k", false, false, false, 0},
		{"bias", ir.F16, 1, 64, 64, 64, 64, ops.MaskNone, "k", true, false, false, 0},
		{"position", ir.F16, 1, 64, 64, 64, 64, ops.MaskPosition, "k", false, false, false, 0},
		{"e 80", ir.F16, 1, 64, 64, 80, 80, ops.MaskNone, "k", false, false, false, 0},
		{"ev 24", ir.F16, 1, 64, 64, 64, 24, ops.MaskNone, "v", false, false, false, 0},
		{"no keys", ir.F16, 1, 64, 0, 64, 64, ops.MaskNone, "k", false, false, false, 0},
		{"no batch", ir.F16, 0, 64, 64, 64, 64, ops.MaskNone, "k", false, false, false, 0},
		{"do transposed", ir.F16, 1, 64, 64, 64, 64, ops.MaskNone, "v", false, true, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := attentionGrad(t, c.d, c.b, c.l, c.s, c.e, c.ev, c.mask, c.wrt, c.bias, c.doT)
			if got := FitsGrad(op); got != c.want {
				t.Errorf("FitsGrad = %v, want %v", got, c.want)
			}
			if c.want && GradBlocks(op) != c.blocks {
				t.Errorf("GradBlocks = %d, want %d", GradBlocks(op), c.blocks)
			}
		})
	}
	if FitsGrad(attention(t, ir.F16, 1, 64, 64, 64, 64, false)) {
		t.Error("the forward is not attention_grad")
	}
}
