package ptx

import (
	"regexp"
	"strings"
	"testing"
)

// A symbolic row kernel (Kernel.Rows) takes its size as a trailing .u32 parameter, bounds its
// rows (or M) by it instead of the bound's immediate, grows its grid along the right axis in
// tiles of its template's unit, assembles without spills for sm_80 and sm_90, and is never the
// static kernel of the same bound types. Its run is tested at many sizes in package compiler.
func TestSymbolicRowTemplates(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		rows      int
		work      SymWork // Vector, Block, MaxBlocks as written; Scale, Tile, Axis checked
		bound     string  // a regexp the static kernel matches and the symbolic one must not
	}{
		{"loop with a static bias", "graph k {\n  input %x : f32[40,6]\n  input %b : f32[6]\n  %0 = broadcast_in_dim(%b) {shape=[40,6], dims=[1]} : f32[40,6]\n  %1 = add(%x, %0) : f32[40,6]\n  output out = %1\n}\n",
			20, SymWork{Scale: 12}, `setp\.ge\.u32 %p\d+, %r\d+, (240|120|60);`},
		{"row softmax", "graph k {\n  input %x : f32[30,50]\n  %0 = reduce_max(%x) {axes=[1]} : f32[30]\n  %1 = broadcast_in_dim(%0) {shape=[30,50], dims=[0]} : f32[30,50]\n  %2 = sub(%x, %1) : f32[30,50]\n  %3 = exp(%2) : f32[30,50]\n  %4 = reduce_sum(%3) {axes=[1]} : f32[30]\n  %5 = broadcast_in_dim(%4) {shape=[30,50], dims=[0]} : f32[30,50]\n  %6 = div(%3, %5) : f32[30,50]\n  output out = %6\n}\n",
			30, SymWork{Scale: 1, Tile: 1}, `setp\.ge\.u32 %p\d+, %r\d+, 30;`},
		{"FFMA GEMM", "graph k {\n  input %x : f32[300,20]\n  input %w : f32[24,20]\n  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[300,24]\n  output out = %0\n}\n",
			300, SymWork{Scale: 1, Tile: mmBM, Axis: 1}, `setp\.lt\.u32 %p\d+, %r\d+, 300;`},
		{"tensor-core GEMM", "graph k {\n  input %x : f16[3,100,32]\n  input %w : f16[32,16]\n  %0 = dot_general(%x, %w) {lhs_contract=[2], rhs_contract=[0]} : f16[3,100,16]\n  output out = %0\n}\n",
			3, SymWork{Scale: 100, Tile: mmBM, Axis: 1}, `setp\.lt\.s32 %p\d+, %r\d+, 300;`},
		{"batched FFMA products", "graph k {\n  input %x : f32[3,6,8]\n  input %y : f32[3,8,20]\n  %0 = dot_general(%x, %y) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f32[3,6,20]\n  output out = %0\n}\n",
			3, SymWork{Scale: 1, Tile: 1, Axis: 2}, ``},
		{"GEMV (split k)", "graph k {\n  input %x : f32[6,512]\n  input %w : f32[64,512]\n  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[6,64]\n  output out = %0\n}\n",
			6, SymWork{Scale: 1, Tile: 6, Axis: 2}, `\$L_k_rows_\d+:`},
		{"conv2d", "graph k {\n  input %x : f32[5,3,7,7]\n  input %w : f32[4,3,3,3]\n  %0 = conv2d(%x, %w) {stride=[1,1], padding=[1,1], dilation=[1,1], groups=1} : f32[5,4,7,7]\n  output out = %0\n}\n",
			5, SymWork{Scale: 49, Tile: mmBM, Axis: 1}, `setp\.lt\.s32 %p\d+, %r\d+, 245;`},
		{"direct: a constant operand", "graph k {\n  input %x : f32[7,6,256]\n  %0 = constant() {dtype=f32, shape=[256], value=[1.0]} : f32[256]\n  %1 = dot_general(%x, %0) {lhs_contract=[2], rhs_contract=[0]} : f32[7,6]\n  output out = %1\n}\n",
			7, SymWork{Scale: 6}, `setp\.(ge|lt)\.[us]32 %p\d+, %r\d+, 42;`},
		{"fold: column reduction over the rows", "graph k {\n  input %x : f32[40,6]\n  %0 = reduce_sum(%x) {axes=[0]} : f32[6]\n  output out = %0\n}\n",
			40, SymWork{Scale: 1, Tile: 40, Axis: 2}, `setp\.ge\.u32 %p\d+, %r\d+, 40;`},
		{"fold: scattered axes around a kept one (row template)", "graph k {\n  input %x : f32[40,3,5,5]\n  %0 = reduce_sum(%x) {axes=[0,2,3], keepdims=true} : f32[1,3,1,1]\n  output out = %0\n}\n",
			40, SymWork{Scale: 25, Tile: 1000, Axis: 2}, `setp\.ge\.u32 %p\d+, %r\d+, 1000;`},
		{"inner: a middle axis of the rows reduced (column template, its tiles the size)", "graph k {\n  input %x : f32[4,6,8]\n  %0 = reduce_sum(%x) {axes=[1]} : f32[4,8]\n  output out = %0\n}\n",
			4, SymWork{Scale: 1, Tile: 1}, `setp\.ge\.u32 %p\d+, %r\d+, 4;`},
		{"inner: upsampling's backward over [rows, C, H, 2, W, 2]", "graph k {\n  input %dy : f32[3,2,4,2,4,2]\n  %0 = reduce_sum(%dy) {axes=[3,5]} : f32[3,2,4,4]\n  output dx = %0\n}\n",
			3, SymWork{Scale: 32, Tile: 1}, ``},
		{"fold: GEMM whose K is the rows", "graph k {\n  input %x : f32[150,12]\n  input %dy : f32[150,20]\n  %0 = dot_general(%x, %dy) {lhs_contract=[0], rhs_contract=[0]} : f32[12,20]\n  output out = %0\n}\n",
			150, SymWork{Scale: 1, Tile: 150, Axis: 2}, `setp\.lt\.s32 %p\d+, %r\d+, 150;`},
		{"fold: tensor-core GEMM whose K is the rows", "graph k {\n  input %x : f16[3,5,16]\n  input %dy : f16[3,5,24]\n  %0 = dot_general(%x, %dy) {lhs_contract=[0,1], rhs_contract=[0,1]} : f16[16,24]\n  output out = %0\n}\n",
			3, SymWork{Scale: 5, Tile: 15, Axis: 2}, `setp\.lt\.s32 %p\d+, %r\d+, 15;`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := parse(t, tc.src)
			k := Kernel{Name: "k0", Graph: g, Symbolic: true, Rows: tc.rows}
			text, l, err := Generate(k, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if last := l.Params[len(l.Params)-1]; last.Kind != ArgSize || l.Work == nil {
				t.Fatalf("params %v, work %v", l.Params, l.Work)
			}
			w := *l.Work
			if w.Scale != tc.work.Scale || w.Tile != tc.work.Tile || w.Axis != tc.work.Axis || w.Tile > 0 && w.MaxBlocks != l.Grid[w.Axis] {
				t.Errorf("work %+v, want scale %d, tile %d, axis %d, at most the bound's grid %v", w, tc.work.Scale, tc.work.Tile, tc.work.Axis, l.Grid)
			}
			static, sl, err := Generate(Kernel{Name: "k0", Graph: g}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			// A reduction over inner axes takes the static build's template, the column one
			// with its tiles the size (symcolumn.go) or the scattered row one, at the bound's grid.
			if sl.Grid != l.Grid || sl.Work != nil {
				t.Errorf("the static kernel's grid %v (work %v), the symbolic one's at the bound %v", sl.Grid, sl.Work, l.Grid)
			}
			re := regexp.MustCompile(tc.bound)
			if static == text || ShareKey(k) == ShareKey(Kernel{Name: "k0", Graph: g}) {
				t.Error("the symbolic kernel is the static one")
			}
			switch {
			case strings.Contains(tc.name, "GEMV"):
				// One k loop per row count, the run's taken before any: no k step tests a row.
				if re.MatchString(static) || !re.MatchString(text) || !strings.Contains(text, "// gemv:") {
					t.Errorf("GEMV rows: static %v, symbolic %v (want false, true) for %s", re.MatchString(static), re.MatchString(text), tc.bound)
				}
				loops := regexp.MustCompile(`(?s)\$L_k_loop_\d+:.*?\$L_k_done_\d+:`).FindAllString(text, -1)
				if len(loops) != tc.rows {
					t.Errorf("%d k loops, want one per row count 1..%d", len(loops), tc.rows)
				}
				for i, l := range loops {
					if strings.Contains(l, "rows_done") || strings.Count(l, "fma.rn.f32") != 4*(len(loops)-i) {
						t.Errorf("k loop %d: %d fma, a row test %v; want %d fma and none", i, strings.Count(l, "fma.rn.f32"), strings.Contains(l, "rows_done"), 4*(len(loops)-i))
					}
				}
			case strings.Contains(tc.name, "GEMM") || strings.HasPrefix(tc.name, "fold") || strings.HasPrefix(tc.name, "inner: a middle") || tc.name == "conv2d" || tc.name == "row softmax" || strings.HasPrefix(tc.name, "direct"):
				// The static kernel checks the bound as an immediate; the symbolic one never does.
				if !re.MatchString(static) || re.MatchString(text) {
					t.Errorf("edge checks: static %v, symbolic %v (want true, false) for %s", re.MatchString(static), re.MatchString(text), tc.bound)
				}
			}
			if strings.HasPrefix(tc.name, "inner") && l.Grid[0] != tc.rows*tc.work.Scale {
				t.Errorf("grid %v, want a block per kept element or column tile at the bound (%d)", l.Grid, tc.rows*tc.work.Scale)
			}
			if !strings.Contains(text, "ld.param.u32") {
				t.Error("the size parameter is never loaded")
			}
			assemble(t, "//\n.version 7.8\n.target sm_80\n.address_size 64\n\n"+text)
		})
	}
}

// A symbolic kernel whose template does not take a row count is refused naming why.
func TestSymbolicRowTemplatesRefused(t *testing.T) {
	for _, tc := range []struct {
		src  string
		rows int
		want string
	}{
		{"graph k {\n  input %x : f32[10,6]\n  %0 = broadcast_in_dim(%x) {shape=[10,6], dims=[0,1]} : f32[10,6]\n  output out = %0\n}\n", 7,
			"element count 60 at the bound is not a whole number of its 7 rows"},
		{"graph k {\n  input %x : f16[10,3]\n  input %y : f16[10,3,16]\n  %0 = dot_general(%x, %y) {lhs_contract=[0,1], rhs_contract=[0,1]} : f16[16]\n  output out = %0\n}\n", 10,
			"a tensor-core GEMM whose K is the symbolic rows, contiguous, with 3 per row (not a multiple of 8), does not run at symbolic sizes yet"},
		{"graph k {\n  input %x : f32[4,6,8]\n  %0 = reduce_sum(%x) {axes=[1]} : f32[4,8]\n  %1 = reduce_sum(%x) {axes=[0,2]} : f32[6]\n  output out = %0\n  output s = %1\n}\n", 4,
			"reductions over different shapes or axes"},
		{"graph k {\n  input %x : f32[4,6,8]\n  %0 = reduce_max(%x) {axes=[0,2], keepdims=true} : f32[1,6,1]\n  %1 = broadcast_in_dim(%0) {shape=[4,6,8], dims=[0,1,2]} : f32[4,6,8]\n" +
			"  %2 = sub(%x, %1) : f32[4,6,8]\n  %3 = exp(%2) : f32[4,6,8]\n  %4 = reduce_sum(%3) {axes=[0,2], keepdims=true} : f32[1,6,1]\n  %5 = log(%4) : f32[1,6,1]\n  output out = %5\n}\n", 4,
			"an online softmax over scattered axes [0 2] of [4,6,8] folding the symbolic rows does not run at symbolic sizes yet"},
	} {
		_, _, err := Generate(Kernel{Name: "k0", Graph: parse(t, tc.src), Symbolic: true, Rows: tc.rows}, Target{SM: 80})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate = %v, want %q", err, tc.want)
		}
	}
}
