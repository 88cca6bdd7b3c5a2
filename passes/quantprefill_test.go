package passes_test

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// TestQuantizedPrefill models a 1B-class Llama's prefill products (llama1B's seven projections
// of its 16 layers; the LM head reads only the last token's row) over T = 128 and 512 tokens in
// f16, int8 (per-channel f16 scales) and int4 (groups of 128, f16 scales and u8 zero points):
// each quantized product is one per-run kernel, the tensor-core GEMM reading the integers (no
// bind-time kernel, no float weight), and the int4 prefill reads fewer DRAM bytes than the f16
// one (go test -v prints the table docs/perf.md quotes).
func TestQuantizedPrefill(t *testing.T) {
	type total struct {
		bytes int64
		us    float64
	}
	for _, T := range []int{128, 512} {
		sums := map[string]*total{}
		for _, format := range []string{"f16", "int8", "int4"} {
			sums[format] = &total{}
			for _, p := range llama1B {
				if p.name == "lm_head" {
					continue
				}
				r := runChecked(t, p.name, func(b *frontend.Builder) {
					x := b.Input("x", ir.F16, T, p.k)
					w := llamaWeight(b, format, p.n, p.k)
					b.Output("y", frontend.Linear(x, w, nil))
				})
				st := r.Stats
				if st.Kernels != 1 || st.BindKernels != 0 || r.Plan.ArenaBytes != 0 {
					t.Fatalf("T=%d %s %s: %d kernels, %d bind-time, %d arena bytes; want 1, 0 and 0", T, format, p.name, st.Kernels, st.BindKernels, r.Plan.ArenaBytes)
				}
				s := sums[format]
				s.bytes += int64(p.count) * st.DRAMBytes
				s.us += float64(p.count) * st.ModeledKernelTimeUS
				t.Logf("T=%-3d %-4s %-9s %6d×%-5d ×%2d  %10d B/run  %8.2f µs", T, format, p.name, p.n, p.k, p.count, st.DRAMBytes, st.ModeledKernelTimeUS)
			}
		}
		for _, f := range []string{"f16", "int8", "int4"} {
			s := sums[f]
			t.Logf("T=%d %-4s prefill products: %.1f MB DRAM, %.1f µs in kernels", T, f, float64(s.bytes)/1e6, s.us)
		}
		if f16, i4 := sums["f16"], sums["int4"]; i4.bytes >= f16.bytes || i4.us > f16.us {
			t.Errorf("T=%d: int4 reads %d B in %.1f µs, f16 %d B in %.1f µs", T, i4.bytes, i4.us, f16.bytes, f16.us)
		}
	}
}

// llamaWeight declares a linear layer's weight [n, k] in f16, or quantized as 1B-class
// checkpoints are: int8 with per-channel f16 scales, int4 in groups of 128 with f16 scales and
// u8 zero points.
func llamaWeight(b *frontend.Builder, format string, n, k int) *frontend.Tensor {
	switch format {
	case "int8":
		return frontend.Dequantize(b.Param("q", ir.T(ir.I8, n, k), frontend.Zeros()),
			b.Param("s", ir.T(ir.F16, n, 1), frontend.Zeros()), nil, frontend.Quant{Bits: 8, Group: k, Axis: 1})
	case "int4":
		return frontend.Dequantize(b.Param("q", ir.T(ir.U8, n, k/2), frontend.Zeros()),
			b.Param("s", ir.T(ir.F16, n, k/128), frontend.Zeros()), b.Param("z", ir.T(ir.U8, n, k/128), frontend.Zeros()),
			frontend.Quant{Bits: 4, Group: 128, Axis: 1})
	}
	return b.Param("w", ir.T(ir.F16, n, k), frontend.Zeros())
}
