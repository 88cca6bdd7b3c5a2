package attnmma

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestFitsGradWide: the dq and wide dk/dv predicates take f16/bf16 attention_grad under masks
// none and causal, with or without the bias, head dims multiples of 16 (dq up to 128, dk/dv up
// to GradWideMaxDim, GradBiasMaxDim with a bias), and refuse f32, the position mask, odd or wider
// head dims, no rows (dq) or keys, and K (dq) or do (dk/dv) read across its head dim; FitsGrad
// keeps its narrower meaning, and every op it takes FitsGradWide takes too. GradTakes gives each
// one's grid, GradRowTile the dk/dv template's row tile.
func TestFitsGradWide(t *testing.T) {
	for _, c := range []struct {
		name           string
		d              ir.DType
		b, l, s, e, ev int
		mask, wrt      string
		bias, doT      bool
		dq, wide, old  bool
		blocks         int
	}{
		{"dq f16", ir.F16, 2, 70, 130, 64, 64, ops.MaskCausal, "q", false, false, true, false, false, 2 * 4 * 2},
		{"dq bf16 bias 128", ir.BF16, 1, 1, 1, 128, 128, ops.MaskNone, "q", true, false, true, false, false, 4},
		{"dq 80 ev 16", ir.F16, 1, 64, 9, 80, 16, ops.MaskNone, "q", false, true, true, false, false, 4},
		{"dq no rows", ir.F16, 1, 0, 10, 64, 64, ops.MaskNone, "q", false, false, false, false, false, 0},
		{"dq no keys", ir.F16, 1, 10, 0, 64, 64, ops.MaskNone, "q", false, false, false, false, false, 0},
		{"dq f32", ir.F32, 1, 64, 64, 64, 64, ops.MaskNone, "q", false, false, false, false, false, 0},
		{"dq position", ir.F16, 1, 64, 64, 64, 64, ops.MaskPosition, "q", false, false, false, false, false, 0},
		{"dq e 144", ir.F16, 1, 64, 64, 144, 144, ops.MaskNone, "q", false, false, false, false, false, 0},
		{"dk f16 64", ir.F16, 2, 70, 130, 64, 64, ops.MaskCausal, "k", false, false, false, true, true, 2 * 2 * 3},
		{"dk bias", ir.F16, 1, 64, 64, 64, 64, ops.MaskNone, "k", true, false, false, true, false, 2},
		{"dv bf16 96", ir.BF16, 1, 5, 64, 96, 80, ops.MaskCausal, "v", false, false, false, true, false, 2},
		{"dv no rows", ir.F16, 1, 0, 10, 80, 80, ops.MaskNone, "v", true, false, false, true, false, 2},
		{"dk 128", ir.F16, 1, 64, 64, 128, 128, ops.MaskNone, "k", false, false, false, true, false, 2},
		{"dv bias 128", ir.F16, 1, 64, 64, 64, 128, ops.MaskNone, "v", true, false, false, false, false, 0},
		{"dk 144", ir.F16, 1, 64, 64, 144, 144, ops.MaskNone, "k", false, false, false, false, false, 0},
		{"dk e 72", ir.F16, 1, 64, 64, 72, 72, ops.MaskNone, "k", false, false, false, false, false, 0},
		{"dk f32", ir.F32, 1, 64, 64, 64, 64, ops.MaskNone, "k", false, false, false, false, false, 0},
		{"dk position", ir.F16, 1, 64, 64, 64, 64, ops.MaskPosition, "k", false, false, false, false, false, 0},
		{"dk no keys", ir.F16, 1, 64, 0, 64, 64, ops.MaskNone, "k", false, false, false, false, false, 0},
		{"dv do transposed", ir.F16, 1, 64, 64, 80, 80, ops.MaskNone, "v", false, true, false, false, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := attentionGrad(t, c.d, c.b, c.l, c.s, c.e, c.ev, c.mask, c.wrt, c.bias, c.doT)
			if got := FitsGradDQ(op); got != c.dq {
				t.Errorf("FitsGradDQ = %v, want %v", got, c.dq)
			}
			if got := FitsGradWide(op); got != c.wide {
				t.Errorf("FitsGradWide = %v, want %v", got, c.wide)
			}
			if got := FitsGrad(op); got != c.old {
				t.Errorf("FitsGrad = %v, want %v", got, c.old)
			}
			blocks, ok := GradTakes(op)
			if ok != (c.dq || c.wide) || blocks != c.blocks {
				t.Errorf("GradTakes = %d, %v, want %d, %v", blocks, ok, c.blocks, c.dq || c.wide)
			}
		})
	}
	for _, c := range []struct{ e, ev, rows int }{{64, 64, GradRows}, {96, 96, GradRows}, {128, 64, GradRowsWide}, {64, 128, GradRowsWide}} {
		if got := GradRowTile(attentionGrad(t, ir.F16, 1, 64, 64, c.e, c.ev, ops.MaskNone, "k", false, false)); got != c.rows {
			t.Errorf("GradRowTile at head dims %d and %d = %d, want %d", c.e, c.ev, got, c.rows)
		}
	}
	if _, ok := GradTakes(attention(t, ir.F16, 1, 64, 64, 64, 64, false)); ok {
		t.Error("the forward is not attention_grad")
	}
}
