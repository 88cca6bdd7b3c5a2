package ptx

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/sim"
)

// A stride-2 transposed convolution runs as a dense convolution over its input with zeros
// stuffed between the elements (frontend.ConvTranspose2d): it issues the multiply-adds of the
// forward convolution of the same output size, of which a quarter meet a non-zero input. This
// test measures that share on the simulator, for FFMA (f32) and mma (tf32), against the forward
// convolution (docs/perf.md records the log: go test ./codegen/ptx -run TestConvTransposeShare
// -v). It holds each kernel to the reference and checks that neither issues fewer multiply-adds
// than it needs.
func TestConvTransposeShare(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two convolutions of 9.4M multiply-adds each, twice, on the simulator")
	}
	const n, c, hw = 4, 16, 32
	cases := []struct {
		name   string
		model  func(b *frontend.Builder)
		useful int64 // multiply-adds with a non-zero input
	}{
		{"conv2d", func(b *frontend.Builder) {
			x, w := b.Input("x", ir.F32, n, c, hw, hw), b.Input("w", ir.F32, c, c, 3, 3)
			b.Output("y", frontend.Conv2d(x, w, nil, frontend.Conv2dOptions{Padding: [2]int{1, 1}}))
		}, n * c * hw * hw * c * 9},
		{"conv_transpose2d", func(b *frontend.Builder) {
			x, w := b.Input("x", ir.F32, n, c, hw/2, hw/2), b.Input("w", ir.F32, c, c, 3, 3)
			b.Output("y", frontend.ConvTranspose2d(x, w, nil, frontend.ConvTranspose2dOptions{
				Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, OutputPadding: [2]int{1, 1}}))
		}, n * c * (hw / 2) * (hw / 2) * c * 9},
	}
	for _, tf32 := range []bool{false, true} {
		for _, tc := range cases {
			g, err := frontend.Build(tc.name, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			res, err := passes.Run(g, passes.Options{TF32: tf32})
			if err != nil {
				t.Fatal(err)
			}
			harnessTarget = Target{SM: 80, TF32: tf32}
			for _, kn := range res.Kernels.Kernels {
				if kn.Kind != passes.Contraction {
					continue
				}
				r := checkKernel(t, kernelOf(kn, kn.Name), inputsFor(kn.Body, 1, 1), false)
				if r == nil {
					continue
				}
				fp32, mma := r.stats.Classes[sim.ClassFP32], r.stats.Classes[sim.ClassTensor]
				issued, unit := 32*fp32, "FP32 thread instructions"
				if tf32 {
					issued, unit = 16*8*8*mma, "mma multiply-adds (m16n8k8)"
				}
				if issued < tc.useful {
					t.Errorf("%s tf32=%v: %d %s for %d multiply-adds", tc.name, tf32, issued, unit, tc.useful)
				}
				t.Logf("%s tf32=%v %s: %d useful multiply-adds, %d %s (share %.1f%%), %d warp instructions, %d registers (sm_80)",
					tc.name, tf32, kn.Name, tc.useful, issued, unit, 100*float64(tc.useful)/float64(issued), r.stats.WarpInsts, r.regs["sm_80"])
			}
		}
	}
	harnessTarget = Target{SM: 80}
}
