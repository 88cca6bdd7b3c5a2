//go:build gpu

package cuda_test

import "testing"

// TestGPUDependentLaunch: on an sm_90 GPU, a kernel launched with programmatic stream
// serialization (cuLaunchKernelEx) that waits before reading its predecessor's output reads the
// finished values, run after run.
func TestGPUDependentLaunch(t *testing.T) {
	dev := openGPU(t, false)
	defer dev.Close()
	if dev.Info().Arch.Major < 9 {
		t.Skipf("%s is sm_%d%d: programmatic dependent launch needs sm_90", dev.Name(), dev.Info().Arch.Major, dev.Info().Arch.Minor)
	}
	for run := range 20 {
		got, err := runPDLChain(t, dev, "consume", true)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if want := uint32(i + 100 + 7*i); v != want {
				t.Fatalf("run %d: c[%d] = %d, want %d", run, i, v, want)
			}
		}
	}
}
