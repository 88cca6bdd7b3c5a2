//go:build gpu

package collective

import (
	"runtime"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/nccl"
)

// TestGPUAllReduce all-reduces over NCCL on cuda:0 and cuda:1 through the
// Comm interface (go test -tags gpu ./runtime/collective). It skips without
// two GPUs or without NCCL, and fails once both are there.
func TestGPUAllReduce(t *testing.T) {
	drv, err := cuda.Load("")
	if err != nil {
		t.Skip(err)
	}
	if err := drv.Init(); err != nil {
		t.Skip(err)
	}
	if n, err := drv.DeviceCount(); err != nil || n < 2 {
		t.Skipf("%d GPUs (%v): the test needs two", n, err)
	}
	lib, err := nccl.Load("")
	if err != nil {
		t.Skip(err)
	}
	v, err := lib.Version()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NCCL %d", v)

	devs := make([]*cuda.Device, 2)
	ctxs := make([]cuda.Context, 2)
	for i := range devs {
		if devs[i], err = cuda.Open(drv, i, cuda.OptionsFromEnv()); err != nil {
			t.Fatal(err)
		}
		defer devs[i].Close()
		h, err := drv.DeviceGet(i)
		if err != nil {
			t.Fatal(err)
		}
		if ctxs[i], err = drv.DevicePrimaryCtxRetain(h); err != nil {
			t.Fatal(err)
		}
		defer drv.DevicePrimaryCtxRelease(h)
	}
	ncs, err := lib.CommInitAll([]int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	comms := make([]Comm, 2)
	for i, c := range ncs {
		// The calls go on the legacy default stream (0) of each GPU's primary context.
		comms[i] = FromNCCL(lib, c, func(s Stream) error {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := drv.CtxSetCurrent(ctxs[i]); err != nil {
				return err
			}
			return drv.StreamSynchronize(cuda.Stream(s))
		})
	}
	for _, op := range []Op{Sum, Avg} {
		bufs := make([]uint64, 2)
		for i, d := range devs {
			p, err := d.Alloc(8)
			if err != nil {
				t.Fatal(err)
			}
			bufs[i] = uint64(p)
			if err := d.Write(p, encode(ir.F32, []float64{float64(i + 1), 10 * float64(i+1)})); err != nil {
				t.Fatal(err)
			}
			if err := d.Sync(); err != nil { // the data is there before NCCL's stream reads it
				t.Fatal(err)
			}
		}
		if err := comms[0].GroupStart(); err != nil {
			t.Fatal(err)
		}
		for i, c := range comms {
			if err := c.AllReduce(executor.Ptr(bufs[i]), executor.Ptr(bufs[i]), 2, ir.F32, op, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := comms[0].GroupEnd(); err != nil {
			t.Fatal(err)
		}
		want := []float64{3, 30}
		if op == Avg {
			want = []float64{1.5, 15}
		}
		for i, c := range comms {
			if err := c.Wait(); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 8)
			if err := devs[i].Read(b, executor.Ptr(bufs[i])); err != nil {
				t.Fatal(err)
			}
			if got := decode(ir.F32, b); !slices.Equal(got, want) {
				t.Errorf("%v on cuda:%d: %v, want %v", op, i, got, want)
			}
		}
	}
	for _, c := range comms {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}
