package cuda_test

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
)

// The communication stream runs beside the compute stream: work queued on it sees the compute
// work queued before CommAfterCompute, and compute work queued after ComputeAfterComm sees the
// communication queued before it, whichever stream the schedule runs first; without them the
// schedule that runs the other stream first shows stale bytes.
func TestCommStreamOrder(t *testing.T) {
	for _, tc := range []struct {
		schedule simdriver.Schedule
		order    bool
		commSees byte // what the communication stream reads after the compute stream writes 2
		compSees byte // what the compute stream reads after the communication stream writes 3
	}{
		{simdriver.HighStreamFirst, true, 2, 3},
		{simdriver.LowStreamFirst, true, 2, 3},
		{simdriver.HighStreamFirst, false, 1, 3}, // the communication stream (created later) runs first
		{simdriver.LowStreamFirst, false, 2, 2},  // the compute stream runs first
	} {
		t.Run(fmt.Sprintf("%v,order=%v", tc.schedule, tc.order), func(t *testing.T) {
			drv := simdriver.NewWithOptions(simdriver.Options{Schedule: tc.schedule})
			dev, err := cuda.Open(drv, 0, cuda.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := dev.CommAfterCompute(); err == nil {
				t.Error("ordering before CommStream: no error")
			}
			p, err := dev.Alloc(4)
			must(err)
			must(dev.Write(p, []byte{1, 1, 1, 1}))
			must(dev.Sync())
			s, err := dev.CommStream()
			must(err)
			const compute = cuda.Stream(1) // the device's stream: the driver's first
			if again, _ := dev.CommStream(); again != s {
				t.Errorf("CommStream gave %#x, then %#x", s, again)
			}
			must(drv.MemcpyHtoDAsync(cuda.DevicePtr(p), []byte{2, 2, 2, 2}, compute))
			if tc.order {
				must(dev.CommAfterCompute())
			}
			got := make([]byte, 4)
			must(drv.MemcpyDtoHAsync(got, cuda.DevicePtr(p), cuda.Stream(s)))
			must(dev.Sync())
			if got[0] != tc.commSees {
				t.Errorf("the communication stream read %d, want %d", got[0], tc.commSees)
			}
			must(drv.MemcpyHtoDAsync(cuda.DevicePtr(p), []byte{3, 3, 3, 3}, cuda.Stream(s)))
			if tc.order {
				must(dev.ComputeAfterComm())
			}
			must(drv.MemcpyDtoHAsync(got, cuda.DevicePtr(p), compute))
			must(dev.Sync())
			if got[0] != tc.compSees {
				t.Errorf("the compute stream read %d, want %d", got[0], tc.compSees)
			}
		})
	}
}
