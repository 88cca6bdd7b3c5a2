package lm

import (
	"context"
	"math"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/lm/internal/lmtest"
	"github.com/gcomp/gcomp/tensor"
)

// testConfig is the lm.Config of a reference case's config.json.
func testConfig(c *lmtest.Case) Config {
	m := c.Config
	if m["model_type"] == "gpt2" {
		d := lmtest.Int(m, "n_embd", 0)
		return Config{Arch: "gpt2", Vocab: lmtest.Int(m, "vocab_size", 0), Hidden: d, Intermediate: lmtest.Int(m, "n_inner", 4*d),
			Layers: lmtest.Int(m, "n_layer", 0), Heads: lmtest.Int(m, "n_head", 0), MaxSeq: lmtest.Int(m, "n_positions", 0),
			NormEps: lmtest.Num(m, "layer_norm_epsilon")}
	}
	h := lmtest.Int(m, "num_attention_heads", 0)
	return Config{Arch: "llama", Vocab: lmtest.Int(m, "vocab_size", 0), Hidden: lmtest.Int(m, "hidden_size", 0),
		Intermediate: lmtest.Int(m, "intermediate_size", 0), Layers: lmtest.Int(m, "num_hidden_layers", 0), Heads: h,
		KVHeads: lmtest.Int(m, "num_key_value_heads", h), MaxSeq: lmtest.Int(m, "max_position_embeddings", 0),
		NormEps: lmtest.Num(m, "rms_norm_eps"), RopeTheta: lmtest.Num(m, "rope_theta"),
		TiedEmbeddings: lmtest.Bool(m, "tie_word_embeddings"), QKVBias: lmtest.Bool(m, "attention_bias")}
}

// testModel is the reference case's model with its hash weights (rounded to the checkpoint's
// dtype, computed in f32).
func testModel(t testing.TB, c *lmtest.Case) *Model {
	t.Helper()
	cfg := testConfig(c)
	a, err := archOf(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := (&Model{Config: cfg, arch: a}).graph("decode", func(b *frontend.Builder) { a.decode(b, 1) })
	if err != nil {
		t.Fatal(err)
	}
	weights := map[string]*tensor.Tensor{}
	for _, p := range g.Params() {
		w := lmtest.HashWeights(p.Name, p.Type.Shape.NumElements())
		x := tensor.New(p.Type)
		for i, v := range w {
			x.F[i] = float64(v)
			if c.DType == "bf16" {
				x.F[i] = tensor.RoundFloat(ir.BF16, x.F[i])
			}
		}
		weights[p.Name] = x
	}
	m, err := New(cfg, weights)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func reference(t testing.TB) *lmtest.Reference {
	r, err := lmtest.ReadReference("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// relErr is ‖got − want‖ / ‖want‖ over the reference's logits (all of them, or its probes).
func relErr(got []float32, s lmtest.Step, probe []int) float64 {
	var num, den float64
	add := func(g float32, w float64) { num += (float64(g) - w) * (float64(g) - w); den += w * w }
	if s.Logits != nil {
		for i, w := range s.Logits {
			add(got[i], w)
		}
	} else {
		for k, id := range probe {
			add(got[id], s.Probe[k])
		}
		for k, id := range s.TopIDs {
			add(got[id], s.Top[k])
		}
	}
	return math.Sqrt(num / den)
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// Prefill and every decode step of the KV-cache programs give the logits of PyTorch's model
// recomputing the whole sequence, and greedy decoding picks the same tokens, on ref and on the
// simulator.
func TestEngineMatchesReference(t *testing.T) {
	r := reference(t)
	for _, dev := range []string{"ref", "sim"} {
		for i := range r.Cases {
			c := &r.Cases[i]
			steps := len(c.Steps)
			// GPT-2's 50257-row head makes a step cost ~3 M simulated multiply-adds: 8 steps
			// there, every step of the small-vocabulary models.
			if dev == "sim" && (testing.Short() || c.Config["vocab_size"].(float64) > 1024) {
				steps = min(steps, 8)
			}
			t.Run(dev+"/"+c.Name, func(t *testing.T) {
				m := testModel(t, c)
				e, err := m.Open(EngineOptions{Device: dev, NoSimChecks: dev == "sim" && c.Name != "llama"})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				ctx := context.Background()
				logits, err := e.Prefill(ctx, [][]int{c.Prompt})
				if err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				for k := range steps {
					s := c.Steps[k]
					d := relErr(logits[0], s, c.ProbeIDs)
					worst = max(worst, d)
					if d > 1e-4 {
						t.Fatalf("step %d: logits differ from the reference by %.3g (normwise)", k, d)
					}
					if got := argmax(logits[0]); got != s.Argmax {
						t.Fatalf("step %d: greedy token %d, the reference's %d", k, got, s.Argmax)
					}
					if k+1 == steps {
						break
					}
					if logits, err = e.Decode(ctx, []int{s.Argmax}, []int{len(c.Prompt) + k}); err != nil {
						t.Fatal(err)
					}
				}
				t.Logf("%d steps, largest normwise error %.3g", steps, worst)
			})
		}
	}
}
