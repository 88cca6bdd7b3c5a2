package passes

import (
	"fmt"
	"math"
	"testing"
)

// TestFP8GEMMTargets: from sm_89 a dot_general over fp8 operands stays fp8 (one kernel reading
// one byte per operand element, modeled at the fp8 tensor-core peak); for sm_80 (and the zero
// value) the fp8 pass lowers it to the f16 GEMM of cast operands, as before. Both kinds, a
// per-row scale tail, and a product larger than the grid's batch limit, lowered everywhere.
func TestFP8GEMMTargets(t *testing.T) {
	const m, k, n = 128, 4096, 4096
	for _, d := range []string{"f8e4m3", "f8e5m2"} {
		src := fmt.Sprintf(`
  input %%a : %s[%d,%d]
  input %%b : %s[%d,%d]
  input %%s : f16[%d]
  %%0 = dot_general(%%a, %%b) {lhs_contract=[1], rhs_contract=[0]} : f16[%d,%d]
  %%1 = broadcast_in_dim(%%s) {shape=[%d,%d], dims=[0]} : f16[%d,%d]
  %%2 = mul(%%0, %%1) : f16[%d,%d]
  output y = %%2`, d, m, k, d, k, n, m, m, n, m, n, m, n, m, n)
		g := parse(t, src)
		for _, sm := range []int{0, 80, 86, 89, 90} {
			res, err := Run(g, Options{SM: sm})
			if err != nil {
				t.Fatal(err)
			}
			native := sm >= 89
			fp8Dots := 0
			for _, kr := range res.Kernels.Kernels {
				for _, v := range kr.Body.Values {
					if v.Op == "dot_general" && v.Args[0].Type.DType.IsFP8() {
						fp8Dots++
					}
				}
			}
			if want := map[bool]int{true: 1, false: 0}[native]; fp8Dots != want {
				t.Errorf("%s sm_%d: %d fp8 dot_generals in kernels, want %d", d, sm, fp8Dots, want)
			}
			if !native {
				if res.Stats.Kernels < 2 {
					t.Errorf("%s sm_%d: %d kernels, want the casts' and the f16 GEMM's", d, sm, res.Stats.Kernels)
				}
				continue
			}
			if res.Stats.Kernels != 1 {
				t.Fatalf("%s sm_%d: %d kernels, want the fp8 GEMM alone", d, sm, res.Stats.Kernels)
			}
			ks := res.Stats.PerKernel[0]
			if want := int64(m*k + k*n + 2*m); ks.ReadBytes != want || ks.WriteBytes != 2*m*n {
				t.Errorf("%s sm_%d: reads %d bytes, writes %d, want %d and %d", d, sm, ks.ReadBytes, ks.WriteBytes, want, 2*m*n)
			}
			want := max(float64(ks.ReadBytes+ks.WriteBytes)/hbmBytesPerSec, float64(ks.Flops)/fp8FlopsPerSec) / min(1, float64(ks.Blocks)/h100SMs) * 1e6
			if math.Abs(ks.ModeledTimeUS-want) > 1e-9*want {
				t.Errorf("%s sm_%d: %.3f µs modeled, want %.3f", d, sm, ks.ModeledTimeUS, want)
			}
		}
	}
	// A batch beyond the grid's z limit takes the f16 GEMM on every target.
	big := parse(t, `
  input %a : f8e4m3[70000,2,3]
  input %b : f8e4m3[70000,3,2]
  %0 = dot_general(%a, %b) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : f16[70000,2,2]
  output y = %0`)
	res, err := Run(big, Options{SM: 90})
	if err != nil {
		t.Fatal(err)
	}
	for _, kr := range res.Kernels.Kernels {
		for _, v := range kr.Body.Values {
			if v.Op == "dot_general" && v.Args[0].Type.DType.IsFP8() {
				t.Errorf("a batch of 70000 keeps an fp8 dot_general")
			}
		}
	}
}
