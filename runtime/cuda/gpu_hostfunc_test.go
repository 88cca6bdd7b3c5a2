//go:build gpu

package cuda_test

import (
	"sync"
	"testing"
)

// Host functions on the GPU run in stream order, called back from the driver's threads: one
// queued on the side stream after a wait for an event recorded after one on the compute stream
// runs after it, and SyncStream returns once both have run.
func TestGPUHostFuncOrder(t *testing.T) {
	dev := openGPU(t, false)
	side, err := dev.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []string
	note := func(s string) func() {
		return func() {
			mu.Lock()
			ran = append(ran, s)
			mu.Unlock()
		}
	}
	for range 3 {
		if err := dev.LaunchHostFunc(dev.ComputeStream(), note("compute")); err != nil {
			t.Fatal(err)
		}
		ev, err := dev.RecordOn(dev.ComputeStream())
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.WaitOn(side, ev); err != nil {
			t.Fatal(err)
		}
		if err := dev.LaunchHostFunc(side, note("side")); err != nil {
			t.Fatal(err)
		}
		if err := dev.SyncStream(side); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := append([]string(nil), ran...)
		ran = ran[:0]
		mu.Unlock()
		if len(got) != 2 || got[0] != "compute" || got[1] != "side" {
			t.Errorf("host functions ran %v, want [compute side]", got)
		}
		if err := dev.Release(ev); err != nil {
			t.Fatal(err)
		}
	}
}
