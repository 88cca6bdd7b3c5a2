//go:build gpu

package lm

import (
	"testing"

	"github.com/gcomp/gcomp/runtime/cuda"
)

// TestGPUDecodePDL settles issue 25's decode target on a GPU (an H100 for the figure the issue
// asks about):
//
//	go test -tags gpu -run TestGPUDecodePDL -v ./lm
//
// It builds GPT-2 small's decode step (published config, hash weights, batch 1, 1024-token
// cache) for sm_80 and for sm_90, checks one step's logits of each against the reference
// interpreter, and logs, per CUDA graph replayed back to back, µs per step and its ratio to
// reading the weights and cache once at 3.35 TB/s; the time PDL hides per dependent launch
// ((t80 − t90)/(kernels − 1), and the same with the sm_90 kernels launched without PDL in place
// of t80); and the launch cost of a graph node measured with graphs of empty kernels. It fails
// only on wrong results, never on times. On a GPU before sm_90 it measures sm_80 alone.
func TestGPUDecodePDL(t *testing.T) {
	drv, err := cuda.Load("")
	if err != nil {
		t.Skip(err)
	}
	if err := drv.Init(); err != nil {
		t.Skip(err)
	}
	opts := cuda.OptionsFromEnv()
	if opts.Sync || opts.Profile {
		t.Skip("GCOMP_SYNC or profiling: launches wait for each kernel, which graphs cannot")
	}
	// The driver found a GPU: from here on a failure is the test's to report.
	dev, err := cuda.Open(drv, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dev.Close(); err != nil {
			t.Error(err)
		}
	}()
	arch := dev.Info().Arch
	if arch.Major < 8 {
		t.Skipf("%s: gcomp's kernels need compute capability 8.0 or newer", dev.Name())
	}
	launches := []decodeLaunch{launch80}
	if arch.Major >= 9 {
		launches = append(launches, launch90NoPDL, launch90)
	} else {
		t.Logf("%s is sm_%d%d: programmatic dependent launch needs sm_90, so only sm_80 is timed", dev.Name(), arch.Major, arch.Minor)
	}
	c := benchConfigs[0]
	if c.name != "gpt2-small" {
		t.Fatalf("benchConfigs[0] is %s, want gpt2-small", c.name)
	}
	rep := measureDecodePDL(t, dev, hashModel(t, c.c), launches, replaySchedule{warm: 50, steps: 500, trials: 5})
	t.Log("GPT-2 small\n" + rep.table())
}
