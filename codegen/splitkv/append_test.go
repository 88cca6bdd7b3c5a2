package splitkv

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestAppended: the split-KV template appends an update_slice {axis=2} the attention op reads
// as K or V whole, through views that move nothing (K's transpose and its inverse, as the
// matcher leaves it); not an update along another axis, a view that moves (a cache read
// transposed), rows of T = 0, nor a query the prefill template takes.
func TestAppended(t *testing.T) {
	for _, c := range []struct {
		name         string
		l, t, axis   int
		kView        bool // K read through transpose∘transpose
		kMoved       bool // K read through a transpose of S and E (S = E: the shapes agree)
		wantK, wantV bool
		wantRows     int
	}{
		{"decode", 1, 1, 2, false, false, true, true, 2 * 2 * 1 * 8},
		{"through the transpose pair", 1, 1, 2, true, false, true, true, 2 * 2 * 1 * 8},
		{"two query rows, two appended", 2, 2, 2, false, false, true, true, 2 * 2 * 2 * 8},
		{"K read moved", 1, 1, 2, false, true, false, true, 2 * 1 * 8},
		{"another axis", 1, 1, 1, false, false, false, false, 0},
		{"no rows", 1, 0, 2, false, false, false, false, 0},
		{"prefill", 5, 5, 2, false, false, false, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := ir.NewGraph("g")
			e := 8
			cache := ir.T(ir.F32, 1, 2, 8, e)
			q := g.Input("q", ir.T(ir.F32, 1, 2, c.l, e), nil)
			pos := g.Input("pos", ir.T(ir.I64, 1), nil)
			upd := func(name string) *ir.Value {
				kc, rows := g.Input(name+"c", cache, nil), g.Input(name+"new", ir.T(ir.F32, 1, 2, c.t, e), nil)
				return g.Add(ops.UpdateSliceOp, cache, ir.Attrs{"axis": c.axis}, kc, rows, pos)
			}
			k, v := upd("k"), upd("v")
			perm := ir.Attrs{"perm": []int{0, 1, 3, 2}}
			switch {
			case c.kView:
				k = g.Add("transpose", cache, perm, g.Add("transpose", cache, perm, k))
			case c.kMoved:
				k = g.Add("transpose", cache, perm, k)
			}
			attrs := ir.Attrs{"scale": 0.5, "mask": ops.MaskPosition}
			att := g.Add(ops.AttentionOp, q.Type, attrs, q, k, v, pos)
			_, okK := Appended(att, 1)
			_, okV := Appended(att, 2)
			if okK != c.wantK || okV != c.wantV || AppendedRows(att) != c.wantRows {
				t.Errorf("K %v, V %v, %d rows' elements; want %v, %v, %d", okK, okV, AppendedRows(att), c.wantK, c.wantV, c.wantRows)
			}
			if _, ok := Appended(att, 0); ok {
				t.Error("q taken as an appended cache")
			}
		})
	}
}
