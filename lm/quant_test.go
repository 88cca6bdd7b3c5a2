package lm

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/internal/lmtest"
)

// weightError is the quantization's relative rounding error of each linear layer of the
// quantized folder dir against the float folder src: ‖W − Ŵ‖_F / ‖W‖_F, by layer.
func weightError(t *testing.T, src, dir string) map[string]float64 {
	t.Helper()
	read := func(dir string) *checkpoint.Weights {
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
	f32 := func(w *checkpoint.Weight) []float32 {
		a, err := w.Array("f32")
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float32, len(a.Data)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:]))
		}
		return v
	}
	float, quantized := read(src), read(dir)
	out := map[string]float64{}
	for _, w := range float.List {
		q := quantized.Get(w.Name)
		if !checkpoint.Quantizable(w.Name) {
			continue
		}
		if q.Quant == nil {
			t.Fatalf("%s is not quantized", w.Name)
		}
		a, b := f32(w), f32(q)
		var num, den float64
		for i := range a {
			d := float64(a[i]) - float64(b[i])
			num += d * d
			den += float64(a[i]) * float64(a[i])
		}
		out[w.Name] = math.Sqrt(num / den)
	}
	return out
}

// The tiny Llama quantized as gcomp quantize does (int8 per 128 channels, which is per row here;
// int4 in groups of 32) generates, on ref and on the simulator, logits within a bound derived from
// the weights' rounding error, and the float model's greedy tokens wherever its top-2 margin
// exceeds that bound.
//
// The bound: a linear layer whose weight has relative error ε_l gives outputs with relative
// error about ε_l; to first order the errors of the model's layers add as they pass on to the
// logits (the residual stream and the norms carry a relative error through with gain about 1),
// so the logits' normwise relative error is bounded by B = Σ_l ε_l over the 14 quantized layers,
// plus the float engine's own 1e-4. The error spreads over the vocabulary of V logits, so one
// logit moves by about δ = B·‖logits‖₂/√V; where the float model's top-2 margin exceeds 4δ (each
// of the two logits moved by twice that, against each other) the quantized model picks the same
// token given the same prefix. This random model's logits are flat (top-2 margins of 0.01 to 1.6
// against an RMS logit of 1.1), so int8 is checked on a few leading steps and int4 on fewer.
func TestQuantizedGenerates(t *testing.T) {
	r := reference(t)
	c := &r.Cases[1] // llama, f32
	src := t.TempDir()
	if err := lmtest.WriteFolder(src, c, 1); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		bits, group int
		maxBound    float64 // the bound must say something: below this
	}{{8, 128, 0.1}, {4, 32, 1}} {
		name := fmt.Sprintf("int%d_group%d", q.bits, q.group)
		dir := filepath.Join(t.TempDir(), name)
		if _, err := checkpoint.WriteQuantized(src, mkdir(t, dir), q.bits, q.group, false); err != nil {
			t.Fatal(err)
		}
		bound := 1e-4
		for _, e := range weightError(t, src, dir) {
			bound += e
		}
		if bound > q.maxBound {
			t.Fatalf("%s: bound %.3g says nothing (above %.3g)", name, bound, q.maxBound)
		}
		m, _, err := LoadCheckpoint(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range []string{"ref", "sim"} {
			t.Run(name+"/"+dev, func(t *testing.T) {
				e, err := m.Open(EngineOptions{Device: dev, NoSimChecks: true})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				ctx := context.Background()
				logits, err := e.Prefill(ctx, [][]int{c.Prompt})
				if err != nil {
					t.Fatal(err)
				}
				worst, same, checked := 0.0, 0, 0
				greedy := true // every earlier token was checked: the float model's prefix is the quantized model's greedy one
				for k, s := range c.Steps {
					d := relErr(logits[0], s, c.ProbeIDs)
					worst = max(worst, d)
					if d > bound {
						t.Fatalf("step %d: logits off the float model's by %.3g, above the bound %.3g", k, d, bound)
					}
					perLogit := bound * s.Norm / math.Sqrt(float64(len(logits[0])))
					if margin := s.Top[0] - s.Top[1]; margin > 4*perLogit {
						if got := argmax(logits[0]); got != s.Argmax {
							t.Fatalf("step %d: token %d, the float model's %d (margin %.3g > %.3g)", k, got, s.Argmax, margin, 4*perLogit)
						}
						checked++
						if greedy {
							same++
						}
					} else {
						greedy = false
					}
					if k+1 == len(c.Steps) {
						break
					}
					if logits, err = e.Decode(ctx, []int{s.Argmax}, []int{len(c.Prompt) + k}); err != nil {
						t.Fatal(err)
					}
				}
				if q.bits == 8 && same == 0 || worst == 0 {
					t.Fatalf("no greedy token checked (%d) or no quantization error (%.3g)", same, worst)
				}
				t.Logf("bound %.3g, largest normwise error %.3g; the first %d greedy tokens equal the float model's, and %d of %d steps' tokens where the margin allows",
					bound, worst, same, checked, len(c.Steps))
			})
		}
	}
}

// mkdir makes dir and returns it.
func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
