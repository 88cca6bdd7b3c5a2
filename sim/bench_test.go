package sim

import (
	"testing"
)

// Benchmarks report thread-instructions per second ("tinst/s"): the
// simulator's throughput on a compute-bound and a memory-bound kernel, with
// checks on and off.

func benchCompute(b *testing.B, noCheck bool) {
	dev := NewDevice()
	m := load(b, dev, "compute.ptx")
	out, _ := dev.Alloc(4 * 64 * 256)
	cfg := Config{Grid: Dim3{64, 1, 1}, Block: Dim3{256, 1, 1}, NoCheck: noCheck}
	b.ResetTimer()
	var insts int64
	for i := 0; i < b.N; i++ {
		st, err := m.Launch("compute", cfg, out, uint32(64))
		if err != nil {
			b.Fatal(err)
		}
		insts += st.ThreadInsts
	}
	b.ReportMetric(float64(insts)/b.Elapsed().Seconds(), "tinst/s")
}

func benchCopy(b *testing.B, noCheck bool) {
	dev := NewDevice()
	m := load(b, dev, "copy.ptx")
	const n = 1 << 20
	src := upload(b, dev, make([]byte, 4*n))
	dst, _ := dev.Alloc(4 * n)
	cfg := Config{Grid: Dim3{256, 1, 1}, Block: Dim3{256, 1, 1}, NoCheck: noCheck}
	b.ResetTimer()
	var insts int64
	for i := 0; i < b.N; i++ {
		st, err := m.Launch("copy", cfg, dst, src, uint32(n))
		if err != nil {
			b.Fatal(err)
		}
		insts += st.ThreadInsts
	}
	b.ReportMetric(float64(insts)/b.Elapsed().Seconds(), "tinst/s")
}

func BenchmarkComputeChecks(b *testing.B)   { benchCompute(b, false) }
func BenchmarkComputeNoChecks(b *testing.B) { benchCompute(b, true) }
func BenchmarkCopyChecks(b *testing.B)      { benchCopy(b, false) }
func BenchmarkCopyNoChecks(b *testing.B)    { benchCopy(b, true) }

// TestTestdataKernels loads and assembles the kernels in testdata.
func TestTestdataKernels(t *testing.T) {
	for _, f := range []string{"compute.ptx", "copy.ptx", "saxpy.ptx"} {
		t.Run(f, func(t *testing.T) {
			src := string(mustRead(t, "testdata/"+f))
			load(t, NewDevice(), src)
			assembles(t, src)
		})
	}
}
