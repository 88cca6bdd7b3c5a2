package plan

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
)

// TestSymDecodeLength: split-KV decoding over a symbolic cache length takes attention whose keys'
// length is symbolic (K's and V's alike), its heads, query length and head dims static, over a
// static batch or a symbolic one (splitkv.OfAnyLength's split for either); not a static length (a
// symbolic batch alone is SymDecodeBatch's), a symbolic query length, heads or head dim, V of
// another length, a query too long for the template, an appended cache, nor a kernel without
// sizes.
func TestSymDecodeLength(t *testing.T) {
	kv, batch := sym.Sym("kv"), sym.Sym("batch")
	c := func(n int64) sym.Expr { return sym.Const(n) }
	for _, tc := range []struct {
		name        string
		l           int
		q, k, v     []sym.Expr // sizes; nil: no sizes at all
		appended    bool
		ok, anyBtch bool
	}{
		{"length", 1, []sym.Expr{c(2), c(4), c(1), c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, false, true, false},
		{"length and batch", 2, []sym.Expr{batch, c(4), c(2), c(8)}, []sym.Expr{batch, c(2), sym.Add(kv, c(1)), c(8)}, []sym.Expr{batch, c(2), sym.Add(kv, c(1)), c(8)}, false, true, true},
		{"static length", 1, []sym.Expr{batch, c(4), c(1), c(8)}, []sym.Expr{batch, c(2), c(64), c(8)}, []sym.Expr{batch, c(2), c(64), c(8)}, false, false, false},
		{"symbolic query length", 1, []sym.Expr{c(2), c(4), sym.Sym("l"), c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, false, false, false},
		{"symbolic heads", 1, []sym.Expr{c(2), sym.Sym("h"), c(1), c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, false, false, false},
		{"symbolic head dim", 1, []sym.Expr{c(2), c(4), c(1), c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, []sym.Expr{c(2), c(2), kv, sym.Sym("e")}, false, false, false},
		{"V of another length", 1, []sym.Expr{c(2), c(4), c(1), c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, []sym.Expr{c(2), c(2), c(64), c(8)}, false, false, false},
		{"prefill", 8, []sym.Expr{c(2), c(4), c(8), c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, false, false, false},
		{"appended cache", 1, []sym.Expr{c(2), c(4), c(1), c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, []sym.Expr{c(2), c(2), kv, c(8)}, true, false, false},
		{"no sizes", 1, nil, nil, nil, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := ir.NewGraph("g")
			q := g.Input("q", ir.T(ir.F32, 2, 4, tc.l, 8), nil)
			k := g.Input("k", ir.T(ir.F32, 2, 2, 64, 8), nil)
			v := g.Input("v", ir.T(ir.F32, 2, 2, 64, 8), nil)
			pos := g.Input("pos", ir.T(ir.I64, 2), nil)
			if tc.appended {
				k = g.Add(ops.UpdateSliceOp, k.Type, ir.Attrs{"axis": 2}, k, g.Input("knew", ir.T(ir.F32, 2, 2, 1, 8), nil), pos)
			}
			att := g.Add(ops.AttentionOp, q.Type, ir.Attrs{"scale": 0.5, "mask": ops.MaskPosition}, q, k, v, pos)
			var sizes map[*ir.Value][]sym.Expr
			if tc.q != nil {
				sizes = map[*ir.Value][]sym.Expr{q: tc.q, k: tc.k, v: tc.v, att: tc.q}
			}
			sp, b, length, ok := SymDecodeLength(att, sizes)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			want, _ := splitkv.OfAnyLength(att, tc.anyBtch)
			if sp != want || !b.Equal(tc.q[0]) || !length.Equal(tc.k[2]) {
				t.Errorf("plan %+v, batch %s, length %s; want %+v, %s, %s", sp, b, length, want, tc.q[0], tc.k[2])
			}
		})
	}
}
