package passes_test

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// llama1B lists the weight products of one decode step of a 1B-class Llama (Llama 3.2 1B:
// hidden 2048, MLP 8192, 32 query and 8 KV heads of 64, 16 layers, a 128256-token head), as
// [N, K] linear weights and how many of each a token runs.
var llama1B = []struct {
	name  string
	n, k  int
	count int
}{
	{"q_proj", 2048, 2048, 16}, {"k_proj", 512, 2048, 16}, {"v_proj", 512, 2048, 16}, {"o_proj", 2048, 2048, 16},
	{"gate_proj", 8192, 2048, 16}, {"up_proj", 8192, 2048, 16}, {"down_proj", 2048, 8192, 16}, {"lm_head", 128256, 2048, 1},
}

// TestQuantizedDecode models one decode token's weight products of a 1B-class Llama in f16,
// int8 (per-channel f16 scales) and int4 (groups of 128, f16 scales and u8 zero points): the
// int4 token reads at least 3× fewer DRAM bytes than the f16 one, and its modeled kernel time
// is within 1.3× of its ideal bytes at 3.35 TB/s (go test -v prints the table docs/perf.md
// quotes).
func TestQuantizedDecode(t *testing.T) {
	type total struct {
		bytes, ideal int64
		us           float64
	}
	sums := map[string]*total{}
	for _, format := range []string{"f16", "int8", "int4"} {
		sums[format] = &total{}
		for _, p := range llama1B {
			r := runChecked(t, p.name, func(b *frontend.Builder) {
				x := b.Input("x", ir.F16, 1, p.k)
				w := llamaWeight(b, format, p.n, p.k)
				b.Output("y", frontend.Linear(x, w, nil))
			})
			st := r.Stats
			if st.Kernels != 1 || st.BindKernels != 0 {
				t.Fatalf("%s %s: %d kernels, %d bind-time; want 1 and 0", format, p.name, st.Kernels, st.BindKernels)
			}
			s := sums[format]
			s.bytes += int64(p.count) * st.DRAMBytes
			s.ideal += int64(p.count) * st.IdealDRAMBytes
			s.us += float64(p.count) * st.ModeledKernelTimeUS
			t.Logf("%-4s %-9s %6d×%-5d ×%2d  %10d B/run (ideal %10d)  %8.2f µs", format, p.name, p.n, p.k, p.count, st.DRAMBytes, st.IdealDRAMBytes, st.ModeledKernelTimeUS)
		}
	}
	const hbm = 3.35e12
	for _, f := range []string{"f16", "int8", "int4"} {
		s := sums[f]
		t.Logf("%-4s token: %.1f MB DRAM (ideal %.1f MB), %.1f µs in kernels, %.2f× its ideal bytes' time", f,
			float64(s.bytes)/1e6, float64(s.ideal)/1e6, s.us, s.us/(float64(s.ideal)/hbm*1e6))
	}
	f16, i4 := sums["f16"], sums["int4"]
	if ratio := float64(f16.bytes) / float64(i4.bytes); ratio < 3 {
		t.Errorf("int4 reads %.2f× fewer DRAM bytes than f16, want ≥ 3", ratio)
	}
	if bound := float64(i4.ideal) / hbm * 1e6; i4.us > 1.3*bound {
		t.Errorf("int4 token: %.1f µs modeled, more than 1.3× its byte bound %.1f µs", i4.us, bound)
	}
}
