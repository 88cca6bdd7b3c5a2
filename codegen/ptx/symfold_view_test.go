package ptx

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/symtest"
)

// A GEMM whose K is the symbolic rows, reading an operand through a transpose and a reshape
// (attention's heads merged back), takes the dims its values' sizes name as parameters beside
// K's, reads the view through the generic copier (no bound's K compared with a copy's k),
// assembles for sm_80, on tensor cores for f16; without the sizes it is refused naming why.
// Its runs (1, a prime, the bound; memchecked, against the reference and the static build) are
// package compiler's TestSymbolicFoldViews.
func TestSymbolicFoldView(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		rows      int
		mma       bool
	}{
		{"f32", "graph k {\n  input %dq : f32[2,2,13,4]\n  input %x : f32[2,13,8]\n  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[2,13,2,4]\n  %1 = reshape(%0) {shape=[2,13,8]} : f32[2,13,8]\n  %2 = dot_general(%1, %x) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[8,8]\n  output out = %2\n}\n", 26, false},
		{"f16", "graph k {\n  input %x : f16[2,13,16]\n  input %dv : f16[2,2,13,8]\n  %0 = transpose(%dv) {perm=[0,2,1,3]} : f16[2,13,2,8]\n  %1 = reshape(%0) {shape=[2,13,16]} : f16[2,13,16]\n  %2 = dot_general(%x, %1) {lhs_contract=[0,1], rhs_contract=[0,1]} : f16[16,16]\n  output out = %2\n}\n", 26, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := parse(t, tc.src)
			k := Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: tc.rows, Sizes: symtest.SizesOver(g, 13, "seq", nil)}
			text, l, err := Generate(k, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			var dims, counts int
			for _, a := range l.Params {
				switch {
				case a.Kind == ArgSize && a.Expr == "seq":
					dims++
				case a.Kind == ArgSize:
					counts++
				}
			}
			if dims != 1 || counts != 1 || l.Work == nil || l.Work.Axis != 2 || l.Work.Scale != 1 {
				t.Errorf("params %+v, work %+v; want seq's and K's, one block along z", l.Params, l.Work)
			}
			if strings.Contains(text, "mma.sync") != tc.mma {
				t.Errorf("mma.sync in the kernel: %v, want %v", !tc.mma, tc.mma)
			}
			static, _, err := Generate(Kernel{Name: "k0", Graph: g}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if re := regexp.MustCompile(`setp\.lt\.s32 %p\d+, %r\d+, 26;`); re.MatchString(text) || !re.MatchString(static) {
				t.Errorf("a copy compares its k with the bound's K: symbolic %v, static %v (want false, true)", re.MatchString(text), re.MatchString(static))
			}
			assemble(t, "//\n.version 7.8\n.target sm_80\n.address_size 64\n\n"+text)
			k.Sizes = nil
			want := "a GEMM whose K is the symbolic rows, read through a view, does not run at symbolic sizes yet without its values' sizes"
			if _, _, err := Generate(k, Target{SM: 80}); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("without sizes: Generate = %v, want %q", err, want)
			}
		})
	}
}

// A fold through a view in a batched product whose batch dim follows the sizes (here seq, the
// rows too) is symContract's (plan.FoldsSymbolicBatch): grid.z follows the run's batch, one
// block per batch element up to the bound's, a block past the run's batch exits, and it
// assembles. (One with static batch dims keeps the bound's grid: TestSymbolicFoldViewRuns.)
// Its runs are package compiler's TestSymbolicFoldBatch.
func TestSymbolicFoldViewSymbolicBatch(t *testing.T) {
	g := parse(t, "graph k {\n  input %a : f32[6,2,6,3]\n  input %b : f32[6,6,5]\n  %0 = transpose(%a) {perm=[0,2,1,3]} : f32[6,6,2,3]\n  %1 = reshape(%0) {shape=[6,6,6]} : f32[6,6,6]\n  %2 = dot_general(%1, %b) {lhs_batch=[1], rhs_batch=[1], lhs_contract=[0], rhs_contract=[0]} : f32[6,6,5]\n  output out = %2\n}\n")
	text, l, err := Generate(Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: 6, Sizes: symtest.SizesOver(g, 6, "seq", nil)}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if w := l.Work; w == nil || w.Axis != 2 || w.Tile != 1 || w.MaxBlocks != 6 || l.Grid[2] != 6 {
		t.Errorf("grid %v, work %+v; want grid.z over the batch, 6 at the bound", l.Grid, l.Work)
	}
	if !regexp.MustCompile(`mov\.u32 %r\d+, %ctaid\.z;\s+setp\.ge\.u32 %p\d+, %r\d+, %r\d+;`).MatchString(text) {
		t.Error("no block past the run's batch exits")
	}
	assemble(t, "//\n.version 7.8\n.target sm_80\n.address_size 64\n\n"+text)
}
