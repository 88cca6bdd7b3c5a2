package attnmma

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestFits: 16-bit attention of at least 16 query rows, at least one key and head dims that are
// multiples of 16 up to 128, K and V contiguous along the head dim, takes the template; f32,
// fewer rows, no keys, other head dims and K read across its head dim do not.
func TestFits(t *testing.T) {
	for _, c := range []struct {
		name           string
		d              ir.DType
		b, l, s, e, ev int
		kT             bool // k is a transpose of a [B, H, E, S] buffer
		want           bool
		blocks         int
	}{
		{"f16", ir.F16, 2, 130, 40, 64, 64, false, true, 2 * 4 * 3},
		{"bf16 128", ir.BF16, 1, 16, 1, 128, 128, false, true, 4},
		{"ev 16", ir.F16, 1, 64, 9, 80, 16, false, true, 4},
		{"f32", ir.F32, 1, 64, 64, 64, 64, false, false, 0},
		{"15 rows", ir.F16, 1, 15, 64, 64, 64, false, false, 0},
		{"no keys", ir.F16, 1, 64, 0, 64, 64, false, false, 0},
		{"no batch", ir.F16, 0, 64, 64, 64, 64, false, false, 0},
		{"e 72", ir.F16, 1, 64, 64, 72, 72, false, false, 0},
		{"e 144", ir.F16, 1, 64, 64, 144, 144, false, false, 0},
		{"ev 8", ir.F16, 1, 64, 64, 64, 8, false, false, 0},
		{"k transposed", ir.F16, 1, 64, 64, 64, 64, true, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := attention(t, c.d, c.b, c.l, c.s, c.e, c.ev, c.kT)
			if got := Fits(op); got != c.want {
				t.Errorf("Fits = %v, want %v", got, c.want)
			}
			if c.want && Blocks(op) != c.blocks {
				t.Errorf("Blocks = %d, want %d", Blocks(op), c.blocks)
			}
		})
	}
	if Fits(ir.NewGraph("x").Input("q", ir.T(ir.F16, 1, 1, 64, 64), nil)) {
		t.Error("an input is not attention")
	}
}

// TestFitsTF32: f32 attention of the shapes Fits takes runs on tf32 tensor cores only when the
// tf32 option is on (Takes); 16-bit attention takes the template either way, and f32 shapes Fits
// refuses stay off it.
func TestFitsTF32(t *testing.T) {
	for _, c := range []struct {
		name        string
		d           ir.DType
		l, e        int
		fits, plain bool // FitsTF32; Takes without tf32
	}{
		{"f32", ir.F32, 64, 64, true, false},
		{"f32 128", ir.F32, 16, 128, true, false},
		{"f32 15 rows", ir.F32, 15, 64, false, false},
		{"f32 e 72", ir.F32, 64, 72, false, false},
		{"f16", ir.F16, 64, 64, false, true},
		{"bf16", ir.BF16, 64, 64, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := attention(t, c.d, 1, c.l, 40, c.e, c.e, false)
			if got := FitsTF32(op); got != c.fits {
				t.Errorf("FitsTF32 = %v, want %v", got, c.fits)
			}
			if got := Takes(op, false); got != c.plain {
				t.Errorf("Takes(op, false) = %v, want %v", got, c.plain)
			}
			if got := Takes(op, true); got != (c.fits || c.plain) {
				t.Errorf("Takes(op, true) = %v, want %v", got, c.fits || c.plain)
			}
		})
	}
}

// attention is a causal attention op over q [b, 4, l, e] and k, v [b, 2, s, e|ev], k read as
// the transpose of a [b, 2, e, s] buffer with kT.
func attention(t *testing.T, d ir.DType, b, l, s, e, ev int, kT bool) *ir.Value {
	t.Helper()
	g := ir.NewGraph("attn")
	q := g.Input("q", ir.T(d, b, 4, l, e), nil)
	k := g.Input("k", ir.T(d, b, 2, s, e), nil)
	if kT {
		kt := g.Input("kt", ir.T(d, b, 2, e, s), nil)
		k = g.Add("transpose", ir.T(d, b, 2, s, e), ir.Attrs{"perm": []int{0, 1, 3, 2}}, kt)
	}
	v := g.Input("v", ir.T(d, b, 2, s, ev), nil)
	attrs := ir.Attrs{"scale": 1 / math.Sqrt(float64(e)), "mask": ops.MaskCausal}
	ty, err := ops.Infer(ops.AttentionOp, []ir.Type{q.Type, k.Type, v.Type}, attrs)
	if err != nil {
		t.Fatal(err)
	}
	return g.Add(ops.AttentionOp, ty, attrs, q, k, v)
}
