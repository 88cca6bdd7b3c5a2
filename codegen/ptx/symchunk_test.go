package ptx

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// chunkSrc is xᵀ·V per batch element, [nb, seq, 16]ᵀ·[nb, seq, 16] → [nb, 16, 16], with V read
// through views whose contiguous dim (V's 16 columns) is or is not made of 16-byte chunks at
// every seq: headsD merges [nb, 16/D, seq, D] back (16-bit elements: chunks for D = 8, elements
// for 4; f32: chunks for 4, elements for 2); sliceS takes columns S… of [nb, seq, 24] (S = 8:
// chunks, 4: elements).
func chunkSrc(kind string, d ir.DType, nb, seq int) string {
	t := d.String()
	x := fmt.Sprintf("graph k {\n  input %%x : %[1]s[%[2]d,%[3]d,16]\n", t, nb, seq)
	dot := fmt.Sprintf("  %%2 = dot_general(%%x, %%1) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : %[1]s[%[2]d,16,16]\n  output out = %%2\n}\n", t, nb)
	var hd, s int
	switch kind {
	case "heads8":
		hd = 8
	case "heads4":
		hd = 4
	case "heads2":
		hd = 2
	case "slice8":
		s = 8
	case "slice4":
		s = 4
	}
	if hd != 0 {
		return x + fmt.Sprintf("  input %%vh : %[1]s[%[2]d,%[4]d,%[3]d,%[5]d]\n  %%0 = transpose(%%vh) {perm=[0,2,1,3]} : %[1]s[%[2]d,%[3]d,%[4]d,%[5]d]\n  %%1 = reshape(%%0) {shape=[%[2]d,%[3]d,16]} : %[1]s[%[2]d,%[3]d,16]\n", t, nb, seq, 16/hd, hd) + dot
	}
	return x + fmt.Sprintf("  input %%vb : %[1]s[%[2]d,%[3]d,24]\n  %%1 = slice(%%vb) {start=[0,0,%[4]d], limit=[%[2]d,%[3]d,%[5]d]} : %[1]s[%[2]d,%[3]d,16]\n", t, nb, seq, s, s+16) + dot
}

// TestSymbolicChunkCopies: the tensor cores' generic operands at symbolic sizes copy 16-byte
// chunks where the run's sizes align them (symchunk.go). Narrow assertions on the PTX: a view
// whose contiguous dim is chunks at every size has no element copy and no branch; one whose
// chunks no size allows keeps the element copies; the scores (row stride seq) take the chunks
// or the element copies by a branch on seq at the launch, the chunk block's copies 16-byte
// cp.async. Each runs on the memchecked, racechecked simulator at seq 0, 1 and 13 (elements)
// and 8, 16 and the bound (chunks): bit for bit the static kernel built at that seq, within
// tolerance of the reference.
func TestSymbolicChunkCopies(t *testing.T) {
	for _, c := range []struct {
		kind   string
		d      ir.DType
		tf32   bool
		batch  bool
		branch bool // the chunks are chosen at the launch
		elems  bool // element copies appear (2-byte ld.global, or tf32's 4-byte cp.async)
	}{
		{"heads8", ir.F16, false, false, false, false},
		{"heads8", ir.BF16, false, true, false, false},
		{"heads8", ir.F32, true, false, false, false}, // tf32: chunks of 4 floats
		{"heads4", ir.F32, true, true, false, false},  // d = 4 floats: 16 bytes
		{"heads2", ir.F32, true, true, false, true},
		{"slice8", ir.F16, false, false, false, false},
		{"heads4", ir.F16, false, false, false, true},
		{"slice4", ir.BF16, false, true, false, true},
		{"scores", ir.F16, false, false, true, true},
		{"scores", ir.F32, true, true, true, true},
	} {
		t.Run(fmt.Sprintf("%s/%s/batch=%v/tf32=%v", c.kind, c.d, c.batch, c.tf32), func(t *testing.T) {
			const bound = 40
			src := chunkSrc
			if c.kind == "scores" {
				src = contractSrc
			}
			tgt := Target{SM: 80, TF32: c.tf32}
			g := parse(t, src(c.kind, c.d, 3, bound))
			text, ls, err := Module([]Kernel{{Name: "k0", Graph: g, Symbolic: true, Rows: 3, Sizes: contractSizes(g, bound, c.batch)}}, tgt)
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			elem := regexp.MustCompile(`ld\.global\.u16|cp\.async\.ca\.shared\.global.*, 4, `)
			if got := elem.MatchString(text); got != c.elems {
				t.Errorf("element copies %v, want %v", got, c.elems)
			}
			fast, slow, branch := chunkBlocks(text)
			if branch != c.branch {
				t.Errorf("chunks chosen at the launch %v, want %v", branch, c.branch)
			}
			chunk := regexp.MustCompile(`cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16, `)
			if branch && (!chunk.MatchString(fast) || elem.MatchString(fast) || !elem.MatchString(slow) || chunk.MatchString(slow)) {
				t.Errorf("the chunk block does not copy 16-byte chunks only, or the element block elements only:\n%s\n----\n%s", fast, slow)
			}
			runContractSeqs(t, text, ls[0], g, func(nb, seq int) string { return src(c.kind, c.d, nb, seq) }, []int{0, 1, 8, 13, 16, bound}, bound, c.batch, tgt, contractPrec(c.d, c.tf32))
		})
	}
}

// chunkBlocks returns the first chunk block of text (between a branch to the element copies
// and the branch past them) and its element block, and whether there is one.
func chunkBlocks(text string) (fast, slow string, ok bool) {
	m := regexp.MustCompile(`bra (\$L_elem_copies_\d+);`).FindStringSubmatchIndex(text)
	if m == nil {
		return "", "", false
	}
	elems := text[m[2]:m[3]]
	rest := text[m[1]:]
	i := strings.Index(rest, "bra.uni ")
	j := strings.Index(rest, elems+":")
	if i < 0 || j < i {
		return "", "", false
	}
	k := strings.Index(rest[j:], "$L_copies_done")
	if k < 0 {
		return "", "", false
	}
	return rest[:i], rest[j : j+k], true
}

// runContractSeqs runs kernel l (of g, built at bound) at each seq of seqs (runSymContract) over
// a batch of 3, or of 1 or 3 when the batch is symbolic (the bound's 3 at the bound), on inputs
// seeded by seq, and checks its output bit for bit against the static kernel's at that seq and
// within prec of the reference; it logs both kernels' warp instructions (docs/perf.md's).
func runContractSeqs(t *testing.T, text string, l Launch, g *ir.Graph, src func(nb, seq int) string, seqs []int, bound int, batch bool, tgt Target, prec ir.DType) {
	t.Helper()
	for _, seq := range seqs {
		nb := 3
		if batch && seq != bound {
			nb = 1 + seq%2*2 // 1 or 3
		}
		gs := parse(t, src(nb, seq))
		in, _, err := tensor.SeededValues(gs, uint64(seq))
		if err != nil {
			t.Fatal(err)
		}
		got, st := runSymContract(t, text, l, g, gs, seq, nb, in)
		run := checkStaticAndRef(t, fmt.Sprintf("seq %d batch %d", seq, nb), got, gs, in, tgt, prec, seq, true)
		t.Logf("seq %d of %d, batch %d: %d warp instructions built once, %d static (%.3f×)", seq, bound, nb, st.WarpInsts, run.stats.WarpInsts, float64(st.WarpInsts)/float64(run.stats.WarpInsts))
	}
}
