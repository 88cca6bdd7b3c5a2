//go:build linux && (amd64 || arm64) && !nocuda

package collective

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/nccl"
	"github.com/gcomp/gcomp/runtime/nccl/nccltest"
)

// hostMemory is memory of the stub NCCL library, whose "device" pointers are
// host pointers: each allocation's bytes by its address.
type hostMemory map[executor.Ptr][]byte

func (m hostMemory) Read(dst []byte, p executor.Ptr) error {
	copy(dst, m[p])
	return nil
}

func (m hostMemory) Write(p executor.Ptr, src []byte) error {
	copy(m[p], src)
	return nil
}

// TestNCCLAdapter drives two ranks through the Comm interface over NCCL (the
// stub library of nccltest, built from C): the types and
// reductions map to NCCL's, a group brackets the calls, and Wait
// synchronizes each stream used and polls the asynchronous error.
func TestNCCLAdapter(t *testing.T) {
	path := nccltest.Build(t)
	lib, err := nccl.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW)
	if err != nil {
		t.Fatal(err)
	}
	var alloc func(n uint64) unsafe.Pointer
	purego.RegisterLibFunc(&alloc, h, "stub_alloc")

	ncs, err := lib.CommInitAll([]int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	var synced []Stream
	comms := make([]Comm, 2)
	for i, c := range ncs {
		comms[i] = FromNCCL(lib, c, func(s Stream) error { synced = append(synced, s); return nil })
	}
	mem := hostMemory{}
	bufs := make([]executor.Ptr, 2)
	for r := range bufs {
		p := alloc(8)
		bufs[r] = executor.Ptr(uintptr(p))
		mem[bufs[r]] = unsafe.Slice((*byte)(p), 8)
		check(t, mem.Write(bufs[r], encode(ir.F32, []float64{float64(r + 1), 10})))
	}
	check(t, comms[0].GroupStart())
	for r, c := range comms {
		if err := c.AllReduce(bufs[r], bufs[r], 2, ir.F32, Avg, Stream(100+r)); err != nil {
			t.Fatal(err)
		}
	}
	check(t, comms[0].GroupEnd())
	for r, c := range comms {
		check(t, c.Wait())
		b := make([]byte, 8)
		check(t, mem.Read(b, bufs[r]))
		if got := decode(ir.F32, b); !slices.Equal(got, []float64{1.5, 10}) {
			t.Errorf("rank %d: %v, want [1.5 10]", r, got)
		}
	}
	if !slices.Equal(synced, []Stream{100, 101}) {
		t.Errorf("streams synchronized: %v", synced)
	}
	if err := comms[0].AllReduce(bufs[0], bufs[0], 1, ir.Bool, Sum, 0); err == nil {
		t.Error("a bool all-reduce reached NCCL")
	}
	for _, c := range comms {
		check(t, c.Close())
	}
}
