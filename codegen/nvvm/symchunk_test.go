package nvvm

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
)

// TestSymbolicChunkCopies: a fold's generic tensor-core operand (attention's heads of d
// elements merged back through a transpose and a reshape) copies 16-byte chunks through its
// views when d, and so every size along its contiguous dim at every run, is a multiple of 8
// halves, and element copies otherwise (symchunk.go); either way the product equals the
// reference and codegen/ptx's bit for bit at 0, 1, a prime and the bound (runFoldViews). The
// left operand's 12 free halves take 4-byte copies, so any 16-byte one is the right side's.
func TestSymbolicChunkCopies(t *testing.T) {
	p := requireProducer(t)
	chunk := regexp.MustCompile(`cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16, `)
	elem := regexp.MustCompile(`ld\.global\S*\.[ub]16`)
	for _, c := range []struct {
		d      string
		heads  int
		hd     int // elements per head along the contiguous dim
		chunks bool
	}{
		{"f16", 2, 8, true},
		{"bf16", 4, 16, true},
		{"f16", 2, 4, false}, // 8 bytes: no chunk fits a head
		{"bf16", 3, 12, false},
	} {
		t.Run(fmt.Sprintf("%s/%dx%d", c.d, c.heads, c.hd), func(t *testing.T) {
			n := c.heads * c.hd
			src := fmt.Sprintf("graph k {\n  input %%%%x : %[1]s[2,%%[1]d,12]\n  input %%%%dv : %[1]s[2,%[2]d,%%[1]d,%[3]d]\n"+
				"  %%%%0 = transpose(%%%%dv) {perm=[0,2,1,3]} : %[1]s[2,%%[1]d,%[2]d,%[3]d]\n"+
				"  %%%%1 = reshape(%%%%0) {shape=[2,%%[1]d,%[4]d]} : %[1]s[2,%%[1]d,%[4]d]\n"+
				"  %%%%2 = dot_general(%%%%x, %%%%1) {lhs_contract=[0,1], rhs_contract=[0,1]} : %[1]s[12,%[4]d]\n  output out = %%%%2\n}\n",
				c.d, c.heads, c.hd, n)
			text := runFoldViews(t, p, src, "tensor core", 2)
			if got := chunk.MatchString(text); got != c.chunks {
				t.Errorf("16-byte chunk copies %v, want %v", got, c.chunks)
			}
			if got := elem.MatchString(text); got == c.chunks {
				t.Errorf("16-bit element copies %v, want %v", got, !c.chunks)
			}
		})
	}
}

// TestSymbolicChunkBranch: a 16-bit generic tensor-core side whose contiguous run follows seq
// (the scores [b, t, seq] contracted over seq, V's seq columns) takes its 16-byte chunk copies or
// its element copies by a branch uniform over the launch on seq being a multiple of 8 halves
// (symchunk.go): the NVVM IR branches from the prologue's predicate to a block of 16-byte
// cp.async only and to the element copies, and the PTX has both. A side aligned at every size
// (heads of 8 merged back) chunks without a branch or element copies, and one aligned at none
// (heads of 2 floats) copies elements without a branch. tf32 sides (f32 under --tf32) branch alike
// on seq being a multiple of 4 floats, between 16-byte chunks and f32 element copies. On
// the memchecked, racechecked simulator at seq 0, 1, 13 (elements) and 8, 16, 24 and the bound
// (chunks) each equals codegen/ptx's entry bit for bit and the reference within tolerance; both
// entries' warp instructions are logged at every seq (docs/perf.md).
func TestSymbolicChunkBranch(t *testing.T) {
	p := requireProducer(t)
	branch := regexp.MustCompile(`br i1 %\d+, label %chunk_copies\d+, label %elem_copies\d+`)
	chunk16 := regexp.MustCompile(`cp\.async\.cg\.shared\.global \[\$0\], \[\$1\], 16, `)
	// The element copies, through registers: 16-bit loads, or tf32's f32 loads (keyed by tf32).
	elems := map[bool]*regexp.Regexp{
		false: regexp.MustCompile(`load (half|i16|bfloat), (half|i16|bfloat) addrspace\(1\)\*`),
		true:  regexp.MustCompile(`load float, float addrspace\(1\)\*`),
	}
	ptxChunk := regexp.MustCompile(`cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16, `)
	ptxElems := map[bool]*regexp.Regexp{
		false: regexp.MustCompile(`ld\.global\S*\.[ub]16`),
		true:  regexp.MustCompile(`ld\.global\S*\.f32`),
	}
	const scoresV = "graph k {\n  input %p : T[3,12,{{seq}}]\n  input %v : T[3,{{seq}},16]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : T[3,12,16]\n  output out = %0\n}\n"
	const kAndN = "graph k {\n  input %p : T[2,5,{{seq}}]\n  input %v : T[2,{{seq}},{{seq}}]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : T[2,5,{{seq}}]\n  output out = %0\n}\n"
	const heads8 = "graph k {\n  input %x : T[2,2,{{seq}},8]\n  input %y : T[2,{{seq}},16]\n" +
		"  %0 = transpose(%x) {perm=[0,2,1,3]} : T[2,{{seq}},2,8]\n  %1 = reshape(%0) {shape=[2,{{seq}},16]} : T[2,{{seq}},16]\n" +
		"  %2 = dot_general(%1, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : T[2,16,16]\n  output out = %2\n}\n"
	for _, tc := range []struct {
		name, src, dtype string
		rows             int
		bound            int64
		branch           bool // the run decides the chunks
		never            bool // no run's sizes align the chunks: element copies only
	}{
		{"scores·V, the scores generic", scoresV, "f16", 3, 40, true, false},
		{"scores·V, the scores generic", scoresV, "bf16", 3, 40, true, false},
		{"scores·V, the scores generic", scoresV, "f32", 3, 40, true, false},
		{"a weighting per batch element, contiguous K", "graph k {\n  input %w : T[3,{{seq}}]\n  input %v : T[3,{{seq}},16]\n" +
			"  %0 = dot_general(%w, %v) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : T[3,16]\n  output out = %0\n}\n", "f16", 3, 40, true, false},
		{"scores·V with a symbolic M over two row tiles", "graph k {\n  input %p : T[2,{{seq}},{{seq}}]\n  input %v : T[2,{{seq}},16]\n" +
			"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : T[2,{{seq}},16]\n  output out = %0\n}\n", "bf16", 2, 136, true, false},
		{"scores·V, K and N seq", kAndN, "f16", 2, 40, true, false},
		{"scores·V, K and N seq", kAndN, "f32", 2, 40, true, false},
		{"heads of 8 merged through a view", heads8, "f16", 2, 40, false, false},
		{"heads of 8 merged through a view", heads8, "f32", 2, 40, false, false},
		{"heads of 2 floats merged through a view", "graph k {\n  input %x : T[2,8,{{seq}},2]\n  input %y : T[2,{{seq}},16]\n" +
			"  %0 = transpose(%x) {perm=[0,2,1,3]} : T[2,{{seq}},8,2]\n  %1 = reshape(%0) {shape=[2,{{seq}},16]} : T[2,{{seq}},16]\n" +
			"  %2 = dot_general(%1, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : T[2,16,16]\n  output out = %2\n}\n", "f32", 2, 40, false, true},
	} {
		t.Run(tc.name+"/"+tc.dtype, func(t *testing.T) {
			src := strings.ReplaceAll(tc.src, "T[", tc.dtype+"[")
			g, sizes := dimsGraph(t, src, map[string]int64{"seq": tc.bound})
			k := plan.Kernel{Name: "k0_contract", Graph: g, Symbolic: true, Rows: tc.rows, Sizes: sizes}
			target := plan.Target{SM: 80, TF32: tc.dtype == "f32"}
			ll, _, err := IR([]plan.Kernel{k}, target)
			if err != nil {
				t.Fatal(err)
			}
			if got := branch.MatchString(ll); got != tc.branch {
				t.Errorf("a branch to the chunk or the element copies %v, want %v", got, tc.branch)
			}
			tf32 := target.TF32
			if !tc.branch && elems[tf32].MatchString(ll) != tc.never {
				t.Errorf("element copies %v, want %v", !tc.never, tc.never)
			}
			if tc.branch {
				fast := irBlock(ll, "chunk_copies")
				if !chunk16.MatchString(fast) || elems[tf32].MatchString(fast) || !elems[tf32].MatchString(ll) {
					t.Errorf("the chunk block does not copy 16-byte chunks only, or no element copies:\n%s", fast)
				}
			}
			text, l, ptxText, pl := bothEntries(t, p, k, target)
			if tc.branch && (!ptxChunk.MatchString(text) || !ptxElems[tf32].MatchString(text)) {
				t.Errorf("the PTX lacks the 16-byte chunk copies (%v) or the element copies (%v)", ptxChunk.MatchString(text), ptxElems[tf32].MatchString(text))
			}
			assemble(t, text, []plan.Kernel{k})
			for _, seq := range []int64{0, 1, 8, 13, 16, 24, tc.bound} {
				env := map[string]int64{"seq": seq, "b": 1}
				insts, pinsts := contractBothAt(t, src, k, text, l, ptxText, pl, env, 1, max(16, int(seq)), 29, tf32)
				t.Logf("warp instructions at seq %d: nvvm %d, ptx %d (%.2f×)", seq, insts, pinsts, float64(insts)/float64(pinsts))
			}
		})
	}
}

// irBlock is the first basic block of LLVM IR text ll whose label starts with stem.
func irBlock(ll, stem string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(stem) + `\d+:$`).FindStringIndex(ll)
	if m == nil {
		return ""
	}
	b := ll[m[0]:]
	if end := strings.Index(b, "\n\n"); end >= 0 {
		b = b[:end]
	}
	return b
}
