package lm

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/internal/lmtest"
)

// stepError is each quantized linear layer's expected relative rounding error, from its steps:
// √(Σ s²/12)/‖W‖_F, the sum over the layer's weights with each weight's group scale s (rounding
// to nearest leaves an error uniform in ±s/2), W the float folder src's weight, by layer.
func stepError(t *testing.T, src, dir string) map[string]float64 {
	t.Helper()
	float, quantized := readWeights(t, src), readWeights(t, dir)
	out := map[string]float64{}
	for _, w := range float.List {
		if !checkpoint.Quantizable(w.Name) {
			continue
		}
		q := quantized.Get(w.Name)
		if q == nil || q.Quant == nil {
			t.Fatalf("%s is not quantized", w.Name)
		}
		l, err := q.Layer()
		if err != nil {
			t.Fatal(err)
		}
		a, err := w.Array("f32")
		if err != nil {
			t.Fatal(err)
		}
		var num, den float64
		for i := range l.N * l.K {
			s := float64(l.Scales[i/l.K*l.G+int(l.Group[i%l.K])])
			v := float64(math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:])))
			num += s * s / 12
			den += v * v
		}
		out[w.Name] = math.Sqrt(num / den)
	}
	return out
}

// The tiny Llamas quantized as gcomp quantize does (int8 per 128 channels, which is per row here;
// int4 in groups of 32) generate, on ref and on the simulator, logits within the error their
// quantization steps lead one to expect, and the float model's greedy tokens wherever its top-2
// margin exceeds twice that error.
//
// Two bounds, both derived from the steps s (the scales) of the quantized folder:
//
//   - Normwise, worst case to first order: rounding to nearest leaves each weight an error
//     uniform in ±s/2, RMS s/√12, so a layer's weight has relative error ε_l = √(Σ s²/12)/‖W‖_F
//     (the sum over its weights, each with its group's step); a linear layer's outputs then have
//     relative error about ε_l, and to first order the layers' errors add as they pass on to the
//     logits (the residual stream and the norms carry a relative error with gain about 1), so
//     ‖Δz‖/‖z‖ ≤ B = Σ_l ε_l, plus the engine's own 1e-4.
//   - Per logit, expected: B spread over the logits is too loose to compare tokens (the errors
//     of independent roundings add in quadrature, not in line, and the gain differs from 1), so
//     the same error model is run through the float model itself: noiseDraws draws of weights
//     W + u·s, u uniform in [−½, ½) independently for every weight, give each step's RMS logit
//     error σ, and δ = 5σ bounds every logit's error (a Gaussian exceeds 5σ with probability
//     6·10⁻⁷, against the vocabulary's 10² to 10³ logits a step). The quantized model's error is
//     one more draw of that model (round to nearest is not random, but its errors are as
//     uncorrelated), so max_v |Δz_v| ≤ δ is checked at every step, and where the float model's
//     top-2 margin exceeds 2δ the quantized model must pick the same token.
//
// The generate issue's tiny Llama (2 layers, untied, random) has flat logits: top-2 margins of
// 0.01 to 1.6 against an RMS logit of 1.1, and int4's δ is 0.8 to 1.6, so no step allows the
// comparison at int4. The tiny Qwen2 (1 layer, tied embeddings, whose residual stream keeps the
// current token's embedding) has margins of 2.7 to 6 against int4's δ of 1.6 to 2.1: every row
// of the table below requires its minimum of compared steps.
func TestQuantizedGenerates(t *testing.T) {
	r := reference(t)
	for _, q := range []struct {
		model       int // r.Cases
		bits, group int
		maxBound    float64 // the normwise bound must say something: below this
		minChecked  int     // steps whose margin allows comparing the greedy token
	}{
		{1, 8, 128, 0.1, 8},   // llama, f32
		{1, 4, 32, 1, 0},      // llama: no margin exceeds 2δ
		{4, 8, 128, 0.05, 16}, // qwen2, f32
		{4, 4, 32, 0.5, 8},    // qwen2
	} {
		c := &r.Cases[q.model]
		src := t.TempDir()
		if err := lmtest.WriteFolder(src, c, 1); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s/int%d_group%d", c.Name, q.bits, q.group)
		dir := filepath.Join(t.TempDir(), "q")
		if _, err := checkpoint.WriteQuantized(src, mkdir(t, dir), q.bits, q.group, false); err != nil {
			t.Fatal(err)
		}
		bound := 1e-4
		for _, e := range stepError(t, src, dir) {
			bound += e
		}
		if bound > q.maxBound {
			t.Fatalf("%s: bound %.3g says nothing (above %.3g)", name, bound, q.maxBound)
		}
		float, _, err := LoadCheckpoint(src, 0)
		if err != nil {
			t.Fatal(err)
		}
		tokens := greedyTokens(t, float, c.Prompt, len(c.Steps))
		want := runSteps(t, float, "ref", c.Prompt, tokens)
		sigma := logitNoise(t, float, dir, c.Prompt, tokens, want)
		m, _, err := LoadCheckpoint(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range []string{"ref", "sim"} {
			t.Run(name+"/"+dev, func(t *testing.T) {
				got := runSteps(t, m, dev, c.Prompt, tokens)
				worst, worstLogit, checked := 0.0, 0.0, 0
				for k, z := range want {
					d, e := normDiff(got[k], z), maxAbsDiff(got[k], z)
					worst, worstLogit = max(worst, d), max(worstLogit, e/(5*sigma[k]))
					if d > bound {
						t.Fatalf("step %d: logits off the float model's by %.3g, above the bound %.3g", k, d, bound)
					}
					if delta := 5 * sigma[k]; e > delta {
						t.Fatalf("step %d: a logit off the float model's by %.3g, above the expected error's bound δ = %.3g", k, e, delta)
					}
					top1, top2 := topTwo(z)
					if margin := float64(z[top1] - z[top2]); margin > 2*5*sigma[k] {
						if g := argmax(got[k]); g != top1 {
							t.Fatalf("step %d: token %d, the float model's %d (margin %.3g > 2δ = %.3g)", k, g, top1, margin, 10*sigma[k])
						}
						checked++
					}
				}
				if checked < q.minChecked || worst == 0 {
					t.Fatalf("%d steps' greedy tokens compared, want at least %d; normwise error %.3g", checked, q.minChecked, worst)
				}
				t.Logf("normwise bound %.3g, largest error %.3g; δ %.2f to %.2f, largest logit error %.2f of δ; %d of %d steps' greedy tokens compared (margin > 2δ), all equal",
					bound, worst, 5*slices.Min(sigma), 5*slices.Max(sigma), worstLogit, checked, len(want))
			})
		}
	}
}

// noiseDraws is how many draws of the rounding-error model logitNoise runs.
const noiseDraws = 6

// readWeights opens the folder dir's weights, closed when the test ends.
func readWeights(t *testing.T, dir string) *checkpoint.Weights {
	t.Helper()
	cfg, err := checkpoint.ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ck.Close() })
	ws, err := ck.Tensors(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// logitNoise is the RMS logit error, by step, of the float model whose quantizable layers' weights
// are perturbed as rounding to the steps of the quantized folder dir perturbs them, to first order:
// each weight plus u·s, u uniform in [−½, ½), s its group's scale; noiseDraws draws, seeded.
// want is the unperturbed model's logits.
func logitNoise(t *testing.T, float *Model, dir string, prompt, tokens []int, want [][]float32) []float64 {
	t.Helper()
	ws := readWeights(t, dir)
	rng := rand.New(rand.NewPCG(28, 4))
	sum := make([]float64, len(want))
	for range noiseDraws {
		weights := maps.Clone(float.weights)
		for _, w := range ws.List {
			if w.Quant == nil {
				continue
			}
			l, err := w.Layer()
			if err != nil {
				t.Fatal(err)
			}
			p := weights[w.Name].Clone()
			for i := range p.F {
				n, k := i/l.K, i%l.K
				p.F[i] += float64(l.Scales[n*l.G+int(l.Group[k])]) * (rng.Float64() - 0.5)
			}
			weights[w.Name] = p
		}
		m, err := New(float.Config, weights)
		if err != nil {
			t.Fatal(err)
		}
		for k, z := range runSteps(t, m, "ref", prompt, tokens) {
			for v := range z {
				d := float64(z[v]) - float64(want[k][v])
				sum[k] += d * d
			}
		}
	}
	for k := range sum {
		sum[k] = math.Sqrt(sum[k] / float64(noiseDraws*len(want[k])))
	}
	return sum
}

// greedyTokens is m's greedy continuation of prompt on ref: steps tokens.
func greedyTokens(t *testing.T, m *Model, prompt []int, steps int) []int {
	_, tokens := decodeSteps(t, m, "ref", prompt, steps, func(_ int, z []float32) int { return argmax(z) })
	return tokens
}

// runSteps is m's logits on dev after prompt and after each of tokens but the last, the tokens
// given rather than m's own: the steps of a greedy continuation when tokens are its.
func runSteps(t *testing.T, m *Model, dev string, prompt, tokens []int) [][]float32 {
	logits, _ := decodeSteps(t, m, dev, prompt, len(tokens), func(k int, _ []float32) int { return tokens[k] })
	return logits
}

// decodeSteps runs prefill of prompt and steps−1 decode steps on dev, each step's token pick(k,
// its logits); it returns every step's logits and the tokens picked.
func decodeSteps(t *testing.T, m *Model, dev string, prompt []int, steps int, pick func(k int, logits []float32) int) ([][]float32, []int) {
	t.Helper()
	e, err := m.Open(EngineOptions{Device: dev, NoSimChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	logits, err := e.Prefill(ctx, [][]int{prompt})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]float32
	var tokens []int
	for k := range steps {
		out, tokens = append(out, logits[0]), append(tokens, pick(k, logits[0]))
		if k+1 < steps {
			if logits, err = e.Decode(ctx, tokens[k:], []int{len(prompt) + k}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out, tokens
}

// topTwo is the indices of z's largest and second largest elements.
func topTwo(z []float32) (int, int) {
	a, b := argmax(z), -1
	for i, x := range z {
		if i != a && (b < 0 || x > z[b]) {
			b = i
		}
	}
	return a, b
}

// normDiff is ‖a − b‖/‖b‖; maxAbsDiff the largest |a − b|.
func normDiff(a, b []float32) float64 {
	var num, den float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / den)
}

func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

// mkdir makes dir and returns it.
func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
