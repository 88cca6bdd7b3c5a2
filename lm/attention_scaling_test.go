package lm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// scalingModels are the forward (prefill) graphs issue 26's table compares at T tokens: the
// transformer and gpt examples' architectures (examples/transformer, examples/gpt) with their
// sequence set to T, and GPT-2 small's and TinyLlama's prefill programs (benchConfigs) with
// their context raised to T, so the prompt fills the whole KV cache (GPT-2 small's own context
// is 1024 tokens, TinyLlama's 2048).
var scalingModels = []struct {
	name                 string
	batch, heads, layers int
	build                func(T int) (*ir.Graph, error)
}{
	{"transformer", 2, 4, 1, func(T int) (*ir.Graph, error) {
		return frontend.Build("transformer", func(b *frontend.Builder) {
			src := b.Input("src", frontend.F32, 2, T, 64)
			layer := nn.NewTransformerEncoderLayer(b, "", 64, 4, nn.TransformerEncoderLayerOptions{
				DimFeedforward: 128, Activation: "gelu", LayerNormEps: 1e-5, BatchFirst: true,
			})
			b.Output("y", layer.Forward(src))
		})
	}},
	{"gpt", 1, gpt.NHead, gpt.NLayer, func(T int) (*ir.Graph, error) {
		return frontend.Build("gpt", func(b *frontend.Builder) {
			c := gpt.Config{NLayer: gpt.NLayer, NEmbd: gpt.NEmbd, NHead: gpt.NHead, VocabSize: gpt.VocabSize, SeqLen: T}
			tokens := b.Input("tokens", frontend.I64, 1, T).WithRange(0, c.VocabSize)
			b.Output("logits", gpt.NewGPT(b, c).Forward(tokens))
		})
	}},
	{"gpt2-small prefill", 1, 12, 12, func(T int) (*ir.Graph, error) { return prefillAt(benchConfigs[0].c, T) }},
	{"tinyllama-1.1b prefill", 1, 32, 22, func(T int) (*ir.Graph, error) { return prefillAt(benchConfigs[1].c, T) }},
}

// prefillAt is c's prefill program of T tokens with the context raised to T.
func prefillAt(c Config, T int) (*ir.Graph, error) {
	c.MaxSeq = T
	return ProgramGraph(c, "prefill", 1, T)
}

// scalingRow is one build's numbers: the cost report's, the largest buffer of the memory plan,
// the attention kernels, and the buffers that hold scores: written buffers of at least one score
// matrix's elements (scores) whose last dim is the keys' T.
type scalingRow struct {
	kernels                     int
	dram, arena, largest        int64
	modeledUS                   float64
	attentionKernels, scoreBufs int
}

// buildScaling runs the pipeline on g under opt and reads its row at T tokens.
func buildScaling(t *testing.T, g *ir.Graph, opt passes.Options, T, scores int) scalingRow {
	t.Helper()
	r, err := tryScaling(g, opt, T, scores)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryScaling is buildScaling's build, whose error the caller expects.
func tryScaling(g *ir.Graph, opt passes.Options, T, scores int) (scalingRow, error) {
	res, err := passes.Run(g, opt)
	if err != nil {
		return scalingRow{}, err
	}
	s := res.Stats
	r := scalingRow{kernels: s.Kernels, dram: s.DRAMBytes, arena: s.ArenaBytes, modeledUS: s.ModeledTimeUS}
	for _, b := range res.Plan.Buffers {
		r.largest = max(r.largest, b.Size)
	}
	for _, b := range res.Kernels.Buffers {
		sh := b.Type.Shape
		if b.Kind != passes.InputBuffer && b.Kind != passes.ParamBuffer && len(sh) >= 2 && sh[len(sh)-1] == T && sh.NumElements() >= scores {
			r.scoreBufs++
		}
	}
	for _, k := range res.Kernels.Kernels {
		for _, v := range k.Body.Values {
			if v.Op == ops.AttentionOp {
				r.attentionKernels++
				break
			}
		}
	}
	return r, nil
}

// TestAttentionScaling builds each scaling model's forward at T = 512, 2048 and 8192 with
// attention fused and materialized (the attention pass disabled), in f32 and under autocast to
// f16, and holds the fused build to one attention kernel per layer, no score buffer, fewer DRAM
// bytes, a smaller arena and less modeled time than the materialized one, which holds the scores.
// Scores of more than 2^31−1 elements (TinyLlama's 32 heads at T = 8192) are no tensor kernels
// can index: the materialized build is then refused by the memory planner, naming the scores'
// dot_general, and the fused one builds all the same. In f16 the pipeline forms attention before
// its autocast (as train steps do), since the casts autocast puts between the decomposition's ops
// would keep the attention pass from matching; the fused build is the pipeline's own, equal to
// forming attention first by hand (the test checks that too). go test -v prints the table of
// docs/perf.md, "Attention at T = 512, 2048, 8192" (with -short, T = 512 only).
func TestAttentionScaling(t *testing.T) {
	var out strings.Builder
	fmt.Fprintln(&out, "| model | T | dtype | kernels | DRAM bytes | largest buffer | arena bytes | modeled µs |")
	fmt.Fprintln(&out, "|---|---:|---|---|---|---|---|---|")
	arrow := func(a, b int64) string { return commas(a) + " → " + commas(b) }
	for _, m := range scalingModels {
		for _, T := range []int{512, 2048, 8192} {
			if testing.Short() && T > 512 {
				continue
			}
			g, err := m.build(T)
			if err != nil {
				t.Fatal(err)
			}
			scores := m.batch * m.heads * T * T
			formed := passes.FormAttention(g.Clone())
			for _, amp := range []ir.DType{ir.Invalid, ir.F16} {
				dt := "f32"
				if amp != ir.Invalid {
					dt = amp.String()
				}
				name := fmt.Sprintf("%s T=%d %s", m.name, T, dt)
				mat, matErr := tryScaling(g, passes.Options{AMP: amp, DisablePasses: []string{"attention"}}, T, scores)
				asIs := buildScaling(t, g, passes.Options{AMP: amp}, T, scores)
				fused := asIs
				if amp != ir.Invalid {
					if byHand := buildScaling(t, formed, passes.Options{AMP: amp}, T, scores); byHand != asIs {
						t.Errorf("%s: the pipeline under autocast %+v, attention formed first by hand %+v: want the same build", name, asIs, byHand)
					}
				}
				if fused.attentionKernels != m.layers || fused.scoreBufs != 0 {
					t.Errorf("%s: fused: %d attention kernels (want %d), %d buffers of scores", name, fused.attentionKernels, m.layers, fused.scoreBufs)
				}
				if scores > ir.MaxElements {
					// The first layer's scores, in the model's order, at their source position.
					if matErr == nil || !regexp.MustCompile(`^pass memplan: [^ ]+\.go:\d+: %\d+ = dot_general\(.*\]: kernel k\d+_\w+ would compute it: its dimensions multiply to \d+, and a tensor holds at most 2147483647`).MatchString(matErr.Error()) {
						t.Errorf("%s: materialized: %v, want the memory planner to refuse the scores", name, matErr)
					}
					fmt.Fprintf(&out, "| %s | %d | %s | — → %d | — → %s | — → %s | — → %s | — → %.1f |\n", m.name, T, dt, fused.kernels, commas(fused.dram), commas(fused.largest), commas(fused.arena), fused.modeledUS)
					continue
				}
				if matErr != nil {
					t.Fatal(matErr)
				}
				if mat.attentionKernels != 0 || mat.scoreBufs == 0 {
					t.Errorf("%s: materialized: %d attention kernels, %d buffers of scores", name, mat.attentionKernels, mat.scoreBufs)
				}
				if fused.dram >= mat.dram || fused.arena >= mat.arena || fused.largest > mat.largest || fused.modeledUS >= mat.modeledUS {
					t.Errorf("%s: fused %+v not below materialized %+v", name, fused, mat)
				}
				fmt.Fprintf(&out, "| %s | %d | %s | %s | %s | %s | %s | %.1f → %.1f |\n", m.name, T, dt, arrow(int64(mat.kernels), int64(fused.kernels)),
					arrow(mat.dram, fused.dram), arrow(mat.largest, fused.largest), arrow(mat.arena, fused.arena), mat.modeledUS, fused.modeledUS)
			}
		}
	}
	t.Log("materialized → fused, the H100 cost model's numbers:\n" + out.String())
}

// commas writes n with thousands separators, as docs/perf.md's tables do.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
