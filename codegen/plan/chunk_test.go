package plan

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/internal/symtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

func TestAlign(t *testing.T) {
	seq, b := sym.Sym("seq"), sym.Sym("b")
	for _, tc := range []struct {
		e    sym.Expr
		want int
	}{
		{sym.Const(0), 0},
		{sym.Const(24), 24},
		{sym.Const(-6), 6},
		{seq, 1},
		{sym.Mul(sym.Const(8), seq), 8},
		{sym.Add(sym.Mul(sym.Const(8), seq), sym.Const(12)), 4},
		{sym.Mul(sym.Const(-6), sym.Mul(seq, b)), 6},
	} {
		if got := Align(tc.e); got != tc.want {
			t.Errorf("Align(%s) = %d, want %d", tc.e, got, tc.want)
		}
	}
}

// TestChunkSizes: chunks of 8 along an operand's contiguous dim down its views, at the build's
// sizes (nil) or over seq: which sizes the run must make multiples of 8, or none allows them.
func TestChunkSizes(t *testing.T) {
	for _, tc := range []struct {
		name, body string // values over a dim of size 40, seq when symbolic
		group      []int
		symbolic   bool
		want       string // the sizes, or "refused"
	}{
		{"a buffer whose rows are 64", "input %x : f16[3,40,64]", []int{2}, true, "[]"},
		{"a buffer whose rows are seq", "input %x : f16[3,64,40]", []int{2}, true, "[seq]"},
		{"a static buffer whose rows are 40", "input %x : f16[3,64,40]", []int{2}, false, "[]"},
		{"rows of 12", "input %x : f16[3,40,12]", []int{2}, false, "refused"},
		{"not the group's last dim", "input %x : f16[3,40,64]", []int{1}, true, "refused"},
		{"heads of 8 merged back", "input %x : f16[2,4,40,8]\n  %0 = transpose(%x) {perm=[0,2,1,3]} : f16[2,40,4,8]\n  %1 = reshape(%0) {shape=[2,40,32]} : f16[2,40,32]", []int{2}, true, "[]"},
		{"heads of 4 merged back", "input %x : f16[2,8,40,4]\n  %0 = transpose(%x) {perm=[0,2,1,3]} : f16[2,40,8,4]\n  %1 = reshape(%0) {shape=[2,40,32]} : f16[2,40,32]", []int{2}, true, "refused"},
		{"seq moved last", "input %x : f16[2,16,40]\n  %0 = transpose(%x) {perm=[0,2,1]} : f16[2,40,16]\n  %1 = transpose(%0) {perm=[0,2,1]} : f16[2,16,40]", []int{2}, true, "[seq]"},
		{"a slice at column 8", "input %x : f16[40,24]\n  %0 = slice(%x) {start=[0,8], limit=[40,24], stride=[1,1]} : f16[40,16]", []int{1}, true, "[]"},
		{"a slice at column 4", "input %x : f16[40,24]\n  %0 = slice(%x) {start=[0,4], limit=[40,20], stride=[1,1]} : f16[40,16]", []int{1}, true, "refused"},
		{"a broadcast contiguous dim", "input %x : f16[40,1]\n  %0 = broadcast_in_dim(%x) {dims=[0,1], shape=[40,16]} : f16[40,16]", []int{1}, true, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("k.gir", []byte("graph k {\n  "+tc.body+"\n  output o = %"+lastName(tc.body)+"\n}\n"))
			if err != nil {
				t.Fatal(err)
			}
			var sizes map[*ir.Value][]sym.Expr
			if tc.symbolic {
				sizes = symtest.SizesOver(g, 40, "seq", nil)
			}
			conds, ok := ChunkSizes(g.Values[len(g.Values)-1], tc.group, sizes, 8)
			got := "refused"
			if ok {
				got = fmt.Sprint(conds)
			}
			if got != tc.want {
				t.Errorf("ChunkSizes = %s, want %s", got, tc.want)
			}
		})
	}
}

// lastName is the name of the last value body defines: its last "%name =", or its input.
func lastName(body string) string {
	name := ""
	for i := 0; i < len(body); i++ {
		if body[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(body) && body[j] != ' ' && body[j] != ')' && body[j] != ',' {
			j++
		}
		if j+2 < len(body) && (body[j:j+2] == " =" || body[j:j+2] == " :") {
			name = body[i+1 : j]
		}
	}
	return name
}
