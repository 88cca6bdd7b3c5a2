package ptx

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/gemv"
)

// embedNormGEMV is normGEMV with its rows x gathered from an embedding table of vocab rows by
// token ids (plus a position table's rows by positions, for LayerNorm: GPT-2's wte[token] +
// wpe[pos]) and written as a kernel output beside the product (first when embFirst): the decode
// step's first norm GEMV.
func embedNormGEMV(norm, dt string, m, n, k, vocab int, kContig, embFirst bool) string {
	src := normGEMV(norm, dt, m, n, k, kContig)
	var sb strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&sb, f+"\n", a...) }
	p("  param %%wte : %s[%d,%d]", dt, vocab, k)
	p("  input %%tok : i64[%d]", m)
	if norm == "rmsnorm" {
		p("  %%x = gather(%%wte, %%tok) : %s[%d,%d]", dt, m, k)
	} else {
		p("  param %%wpe : %s[%d,%d]", dt, 2*m+1, k)
		p("  input %%pos : i64[%d]", m)
		p("  %%e = gather(%%wte, %%tok) : %s[%d,%d]", dt, m, k)
		p("  %%pe = gather(%%wpe, %%pos) : %s[%d,%d]", dt, m, k)
		p("  %%x = add(%%e, %%pe) : %s[%d,%d]", dt, m, k)
	}
	src = strings.Replace(src, fmt.Sprintf("  input %%x : %s[%d,%d]\n", dt, m, k), sb.String(), 1)
	if embFirst {
		return strings.Replace(src, "  output out = %o\n", "  output emb = %x\n  output out = %o\n", 1)
	}
	return strings.Replace(src, "  output out = %o\n", "  output out = %o\n  output emb = %x\n", 1)
}

// TestGEMVEmbeddingPrologue: a norm GEMV whose rows are gathered embeddings (gemv.RowPrologue
// takes the gathers) computes the product and writes the rows from its first block
// (gemv.RowOutput), both equal to the reference, for f32/f16/bf16, LayerNorm over wte + wpe and
// RMSNorm over one table, tokens at 0 and at vocab−1, split K or not, the rows output first or
// last; checkKernel assembles and runs with memcheck, racecheck and synccheck. A token outside
// the table (vocab, −1) is recorded in the error word (its site, element and value) by the
// launch, which still completes.
func TestGEMVEmbeddingPrologue(t *testing.T) {
	const vocab = 37
	shapes := [][3]int{{1, 768, 768}, {2, 64, 130}, {1, 96, 2048}, {3, 40, 257}, {8, 64, 768}, {5, 40, 257}}
	if testing.Short() {
		shapes = shapes[:2]
	}
	for _, norm := range []string{"layernorm_bias", "rmsnorm"} {
		for _, dt := range []string{"f32", "f16", "bf16"} {
			for i, s := range shapes {
				m, n, k := s[0], s[1], s[2]
				kContig, embFirst := i%2 == 1, i%3 == 2
				t.Run(fmt.Sprintf("%s_%s_%dx%dx%d_kcontig=%v", norm, dt, m, n, k, kContig), func(t *testing.T) {
					g := parse(t, embedNormGEMV(norm, dt, m, n, k, vocab, kContig, embFirst))
					kern := Kernel{Name: "k_embed_" + norm, Graph: g}
					if m > gemv.MaxUnstagedRows {
						// More gathered rows spill: the decode step's first norm keeps its kernel.
						if NormPrologue(g) {
							t.Fatalf("%d gathered rows taken with a norm prologue, want at most %d", m, gemv.MaxUnstagedRows)
						}
						return
					}
					if !NormPrologue(g) {
						t.Fatal("not a GEMV with a norm prologue")
					}
					text, launches, err := Module([]Kernel{kern}, harnessTarget)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(text, "row outputs: the first block writes 1 prologue values") {
						t.Fatal("the kernel does not write its rows")
					}
					in := inputsFor(g, uint64(m*n+k), 1)
					for _, tok := range []int64{0, vocab - 1} {
						for r := range m {
							in["tok"].I[r] = tok
							if norm != "rmsnorm" {
								in["pos"].I[r] = int64(2*r + 1)
							}
						}
						checkKernel(t, kern, in, false)
					}
					sites := 1
					if norm != "rmsnorm" {
						sites = 2
					}
					if len(launches[0].Checks) != sites || launches[0].Checks[0].Rows != vocab {
						t.Fatalf("index checks %+v, want %d, the first of %d rows", launches[0].Checks, sites, vocab)
					}
					for _, bad := range []int64{vocab, -1} {
						in := maps.Clone(in)
						in["tok"] = in["tok"].Clone()
						in["tok"].I[m-1] = bad
						run, err := launchSim(t, text, kern.Name, launches[0], g, in)
						if err != nil {
							t.Fatalf("token %d: %v", bad, err)
						}
						if site, elem, value := run.errorWord(t); site != 1 || elem != uint64(m-1) || value != bad {
							t.Errorf("token %d at element %d: error word site %d, element %d, value %d", bad, m-1, site, elem, value)
						}
					}
				})
			}
		}
	}
}
