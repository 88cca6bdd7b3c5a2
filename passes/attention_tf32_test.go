package passes

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// TestAttentionStatsTF32: under the tf32 option f32 attention of GPT-2 small's shape (12 heads,
// d = 64, T = 2048, causal) is modeled on the tensor-core template (64 query rows per block) at
// the tf32 peak, 495 TFLOP/s; without it on the CUDA-core template (4 rows per block) at 67.
func TestAttentionStatsTF32(t *testing.T) {
	const h, T, d = 12, 2048, 64
	g, err := frontend.Build("attn", func(b *frontend.Builder) {
		q, k, v := b.Input("q", ir.F32, 1, h, T, d), b.Input("k", ir.F32, 1, h, T, d), b.Input("v", ir.F32, 1, h, T, d)
		b.Output("o", frontend.ScaledDotProductAttention(q, k, v, true))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tf32 bool
		rows int
		peak float64
	}{{false, 4, fp32FlopsPerSec}, {true, 64, tf32FlopsPerSec}} {
		res, err := Run(g, Options{TF32: c.tf32})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stats.Kernels != 1 {
			t.Fatalf("tf32 %v: %d kernels, want the attention kernel alone", c.tf32, res.Stats.Kernels)
		}
		k := res.Stats.PerKernel[0]
		want := max(float64(k.ReadBytes+k.WriteBytes)/hbmBytesPerSec, float64(k.Flops)/c.peak) * 1e6
		if k.Blocks != h*T/c.rows || math.Abs(k.ModeledTimeUS-want) > 1e-9*want {
			t.Errorf("tf32 %v: %d blocks, %.2f µs modeled, want %d and %.2f", c.tf32, k.Blocks, k.ModeledTimeUS, h*T/c.rows, want)
		}
	}
}
