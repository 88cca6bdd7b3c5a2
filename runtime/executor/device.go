package executor

import "time"

// Ptr is a device address. The executor only adds offsets to the pointers a
// Device returns; 0 is never a valid allocation.
type Ptr uint64

// Device is the small surface the executor needs from a GPU-like device.
// The simulator (runtime/simdev) and the CUDA driver (runtime/cuda)
// implement it; everything above it — buffer allocation, argument packing,
// launch order, copies — is shared.
//
// Copies and launches may be asynchronous (issued on the device's stream);
// Sync waits for everything issued so far and reports the first failure.
// Read must not return before the bytes are in dst.
type Device interface {
	// Name describes the device, e.g. "sim" or "cuda:0 (NVIDIA H100 80GB HBM3, sm_90)".
	Name() string
	// Alloc returns n bytes of device memory aligned to at least 256 bytes.
	// The contents are undefined.
	Alloc(n int64) (Ptr, error)
	Free(p Ptr) error
	// Write copies src to device memory at p.
	Write(p Ptr, src []byte) error
	// Read copies device memory at p into dst.
	Read(dst []byte, p Ptr) error
	// Zero sets n bytes at p to zero.
	Zero(p Ptr, n int64) error
	// Load loads a PTX module (the text exactly as the compiler wrote it).
	Load(ptx []byte) (Module, error)
	// Sync waits for all work issued to the device.
	Sync() error
	// MemInfo reports the device's free and total memory in bytes.
	MemInfo() (free, total int64, err error)
	// Close releases everything the device holds.
	Close() error
}

// Module is a loaded PTX module.
type Module interface {
	// Launch runs kernel with the given configuration; args are the
	// kernel's .param values in declaration order (every gcomp kernel
	// parameter is a .u64 pointer). The returned counters may be nil when
	// the device measures nothing (or the launch is still in flight).
	Launch(kernel string, cfg LaunchConfig, args []Ptr) (*Counters, error)
	Close() error
}

// LaunchConfig is a kernel's launch geometry.
type LaunchConfig struct {
	Grid, Block [3]int
	SharedBytes int
	// PDL asks for a programmatic dependent launch (artifact.Kernel.PDL): the device may start
	// the kernel before the previous one completes; devices that cannot launch it as any other.
	PDL bool
}

// Labeler is implemented by devices that can name an allocation in their
// diagnostics (the simulator's memcheck messages say "arena" or "param
// 0.weight" instead of an address).
type Labeler interface {
	Label(p Ptr, label string) error
}

// Copier is implemented by devices that copy between device buffers without
// a round trip through the host (cuMemcpyDtoD). Without it the executor
// copies through host memory.
type Copier interface {
	Copy(dst, src Ptr, n int64) error
}

// CopyDevice copies n bytes between buffers of dev: directly where dev is a Copier, else through
// host memory.
func CopyDevice(dev Device, dst, src Ptr, n int64) error {
	if c, ok := dev.(Copier); ok {
		return c.Copy(dst, src, n)
	}
	data := make([]byte, n)
	if err := dev.Read(data, src); err != nil {
		return err
	}
	return dev.Write(dst, data)
}

// Event marks a point in a device's queued work; 0 is no event.
type Event uint64

// HostCopy is one host-to-device copy of an upload.
type HostCopy struct {
	Dst Ptr
	Src []byte
}

// Streams is implemented by devices that copy host memory to the device on a
// stream of their own, beside the compute stream that Write, Zero and
// launches use, so that the next run's inputs upload while the current run
// computes (Program.Prefetch). Without it the executor writes prefetched
// inputs with Write, which is ordered after the work issued before.
type Streams interface {
	// Record returns an event marking the compute work issued so far.
	Record() (Event, error)
	// Upload queues copies on the copy stream, after the compute work that
	// after marks (0: nothing to wait for), and returns the event of their
	// completion. The sources must stay untouched until the copies are done:
	// until a Sync after compute work waited for the event. Memory from
	// AllocHost is copied from in place; other memory is staged first.
	Upload(copies []HostCopy, after Event) (Event, error)
	// Wait makes the compute work issued from now on wait for e; the host
	// does not wait.
	Wait(e Event) error
	// Release hands e back to the device once nothing will wait for it again.
	Release(e Event) error
	// AllocHost returns n bytes of page-locked host memory, which the device
	// copies from asynchronously; FreeHost frees it. Both are safe to call
	// while another goroutine uses the device.
	AllocHost(n int64) ([]byte, error)
	FreeHost(b []byte) error
}

// Counters are what a device measured about one launch. Fields a device
// does not measure stay zero.
type Counters struct {
	Time                time.Duration // wall time of the launch (CUDA events on a GPU)
	WarpInsts           int64         // warp-level instructions issued
	ThreadInsts         int64         // thread-level instructions executed
	GlobalLoadBytes     int64         // bytes the threads requested
	GlobalLoadSectors   int64         // 32-byte sectors those requests touched
	GlobalStoreBytes    int64
	GlobalStoreSectors  int64
	SharedBankConflicts int64 // shared-memory wavefronts beyond the conflict-free minimum
}

// Add accumulates o into c.
func (c *Counters) Add(o *Counters) {
	if o == nil {
		return
	}
	c.Time += o.Time
	c.WarpInsts += o.WarpInsts
	c.ThreadInsts += o.ThreadInsts
	c.GlobalLoadBytes += o.GlobalLoadBytes
	c.GlobalLoadSectors += o.GlobalLoadSectors
	c.GlobalStoreBytes += o.GlobalStoreBytes
	c.GlobalStoreSectors += o.GlobalStoreSectors
	c.SharedBankConflicts += o.SharedBankConflicts
}

// Coalescing is the fraction of fetched global sector bytes the threads
// asked for (loads and stores together), or 1 with no global traffic.
func (c *Counters) Coalescing() float64 {
	sectors := c.GlobalLoadSectors + c.GlobalStoreSectors
	if sectors == 0 {
		return 1
	}
	return float64(c.GlobalLoadBytes+c.GlobalStoreBytes) / float64(32*sectors)
}
