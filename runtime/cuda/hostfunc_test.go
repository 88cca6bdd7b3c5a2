package cuda_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
)

// A host function on a stream of NewStream runs in that stream's order on the simulator-backed
// driver: after the event it waits for (a write on the compute stream), or, without the wait,
// whenever the schedule likes, reading stale memory when the schedule runs its stream first.
// Device.Sync waits for it; the trace records where it ran.
func TestHostFuncStreamOrder(t *testing.T) {
	for _, tc := range []struct {
		schedule simdriver.Schedule
		wait     bool
		want     byte
	}{
		{simdriver.IssueOrder, true, 2},
		{simdriver.LowStreamFirst, true, 2},
		{simdriver.HighStreamFirst, true, 2},
		{simdriver.IssueOrder, false, 2},
		{simdriver.LowStreamFirst, false, 2},
		{simdriver.HighStreamFirst, false, 1}, // the host function's stream runs first: stale
	} {
		t.Run(fmt.Sprintf("%v,wait=%v", tc.schedule, tc.wait), func(t *testing.T) {
			drv := simdriver.NewWithOptions(simdriver.Options{Schedule: tc.schedule, Trace: true})
			dev, err := cuda.Open(drv, 0, cuda.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			p, err := dev.Alloc(4)
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.Write(p, []byte{1, 1, 1, 1}); err != nil {
				t.Fatal(err)
			}
			if err := dev.Sync(); err != nil {
				t.Fatal(err)
			}
			side, err := dev.NewStream()
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.Write(p, []byte{2, 2, 2, 2}); err != nil {
				t.Fatal(err)
			}
			ev, err := dev.RecordOn(dev.ComputeStream())
			if err != nil {
				t.Fatal(err)
			}
			if tc.wait {
				if err := dev.WaitOn(side, ev); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]byte, 4)
			ran := false
			err = dev.LaunchHostFunc(side, func() {
				ran = true
				if err := drv.Memory().Read(got, executor.Ptr(p)); err != nil {
					t.Error(err)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if ran {
				t.Fatal("the host function ran before a sync")
			}
			if err := dev.Sync(); err != nil {
				t.Fatal(err)
			}
			if !ran || got[0] != tc.want {
				t.Errorf("the host function ran %v and read %v, want %d", ran, got, tc.want)
			}
			var trace []string
			for _, r := range drv.Trace() {
				trace = append(trace, fmt.Sprintf("%s@%v", r.What, r.Stream == side))
			}
			if !strings.Contains(strings.Join(trace, " "), "cuLaunchHostFunc@true") {
				t.Errorf("trace %v has no host function on the side stream", trace)
			}
			if err := dev.Release(ev); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The streams a device hands out are its own: a foreign stream is an error, not a driver call.
func TestDeviceStreamChecks(t *testing.T) {
	dev, err := cuda.Open(simdriver.New(), 0, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	other, err := cuda.Open(simdriver.New(), 0, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	foreign, err := other.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	ev, err := dev.Record()
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"RecordOn":       func() error { _, err := dev.RecordOn(foreign); return err }(),
		"WaitOn":         dev.WaitOn(foreign, ev),
		"LaunchHostFunc": dev.LaunchHostFunc(foreign, func() {}),
		"SyncStream":     dev.SyncStream(foreign),
	} {
		if err == nil || !strings.Contains(err.Error(), "is not one of the device's") {
			t.Errorf("%s on another device's stream: %v", name, err)
		}
	}
	if err := dev.WaitOn(dev.ComputeStream(), 999); err == nil || !strings.Contains(err.Error(), "does not hold") {
		t.Errorf("WaitOn an unknown event: %v", err)
	}
}
