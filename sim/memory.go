package sim

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Address layout of the simulated 64-bit address space. Global allocations
// live far above 4 GiB so a pointer truncated to 32 bits never hits one;
// shared and local memory appear in the generic space through two windows,
// as cvta.shared and cvta.local map them.
const (
	globalBase  = 0x0000_1000_0000_0000
	sharedWin   = 0x0000_7E00_0000_0000
	localWin    = 0x0000_7F00_0000_0000
	windowSize  = 1 << 32
	allocAlign  = 256     // cudaMalloc's alignment
	allocGap    = 1 << 16 // unmapped guard between allocations
	poisonByte  = 0xFF    // fresh memory reads as NaN / -1
	maxDevBytes = 1 << 40 // the largest memory limit a device accepts
)

// allocation is one device buffer. init[i] says byte i was written; it is a
// byte, not a bit, so that blocks running in parallel writing neighbouring
// bytes never share a word. A module variable has no init (all its bytes
// count as written) and gets its data only when first used (materialize):
// loading a module that declares a huge array costs nothing.
type allocation struct {
	id     int
	addr   uint64
	size   int
	data   []byte // nil until materialized
	image  []byte // a lazy variable's initializer bytes; the rest is zero
	init   []byte // nil: every byte counts as written
	name   string // module variable name, or ""
	label  string // what the host says this buffer is, for messages
	rdonly bool
}

func (a *allocation) end() uint64 { return a.addr + uint64(a.size) }

// materialize gives a lazy variable its bytes; callers hold Device.mu or
// run before a launch starts.
func (a *allocation) materialize() {
	if a.data == nil {
		a.data = make([]byte, a.size)
		copy(a.data, a.image)
		a.image = nil
	}
}

func (a *allocation) String() string {
	if a.name != "" {
		return fmt.Sprintf("variable %s [%#x, +%d)", a.name, a.addr, a.size)
	}
	if a.label != "" {
		return fmt.Sprintf("allocation #%d (%s) [%#x, +%d)", a.id, a.label, a.addr, a.size)
	}
	return fmt.Sprintf("allocation #%d [%#x, +%d)", a.id, a.addr, a.size)
}

// Device is a simulated GPU: its global memory and the modules loaded on it.
// Memory methods may be called concurrently with each other but not with a
// running launch.
type Device struct {
	mu     sync.Mutex
	allocs []*allocation // sorted by address
	next   uint64
	nextID int
	total  uint64
	limit  uint64 // bytes the device may hold at once (see SetMemoryLimit)

	atomMu [64]sync.Mutex // striped by address for atomics across blocks
	dep    depState       // what launches that may still run touched (griddep.go)
}

// NewDevice returns a device with empty memory and the DefaultMemoryLimit.
func NewDevice() *Device { return &Device{next: globalBase, limit: uint64(DefaultMemoryLimit())} }

// SetMemoryLimit sets the bytes the device may hold at once (its
// allocations and module variables, which the host backs one for one);
// allocations beyond it fail with an error. It does not free anything.
func (d *Device) SetMemoryLimit(n int64) error {
	if n <= 0 || n > maxDevBytes {
		return fmt.Errorf("sim: memory limit %d bytes: want 1 to %d", n, int64(maxDevBytes))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.limit = uint64(n)
	return nil
}

// MemoryLimit is the bytes the device may hold at once.
func (d *Device) MemoryLimit() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return int64(d.limit)
}

// Alloc returns the address of n fresh bytes of global memory. The bytes are
// poisoned: they read as 0xFF and count as never written, so memcheck
// reports a kernel reading them before anything wrote them.
func (d *Device) Alloc(n int) (uint64, error) {
	a, err := d.alloc(n, "")
	if err != nil {
		return 0, err
	}
	return a.addr, nil
}

func (d *Device) alloc(n int, name string) (*allocation, error) {
	a, err := d.reserve(n, name)
	if err != nil {
		return nil, err
	}
	a.data, a.init = make([]byte, n), make([]byte, n)
	for i := range a.data {
		a.data[i] = poisonByte
	}
	return a, nil
}

// allocVar reserves a module variable: zero but for the initializer image,
// every byte written, its memory allocated on first use.
func (d *Device) allocVar(n int, name string, image []byte) (*allocation, error) {
	a, err := d.reserve(n, name)
	if err != nil {
		return nil, err
	}
	a.image = image
	return a, nil
}

// reserve places an allocation of n bytes in the address space, without memory.
// ErrOutOfMemory is wrapped by the error of an allocation beyond the device's memory limit.
var ErrOutOfMemory = errors.New("out of device memory")

func (d *Device) reserve(n int, name string) (*allocation, error) {
	if n < 0 {
		return nil, fmt.Errorf("sim: cannot allocate %d bytes", n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if uint64(n) > d.limit-min(d.total, d.limit) {
		return nil, fmt.Errorf("sim: %w allocating %d bytes: %d of the simulator's %d-byte limit are in use", ErrOutOfMemory, n, d.total, d.limit)
	}
	d.nextID++
	a := &allocation{id: d.nextID, addr: d.next, size: n, name: name}
	d.next += (uint64(n) + allocGap + allocAlign - 1) &^ (allocAlign - 1)
	d.total += uint64(n)
	d.allocs = append(d.allocs, a) // addresses only grow, so the slice stays sorted
	return a, nil
}

// Free releases the allocation starting at addr. Its addresses are never
// reused, so a dangling pointer is reported as out of bounds.
func (d *Device) Free(addr uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, a := range d.allocs {
		if a.addr == addr && a.name == "" {
			d.allocs = append(d.allocs[:i:i], d.allocs[i+1:]...)
			d.total -= uint64(a.size)
			return nil
		}
	}
	return fmt.Errorf("sim: free of %#x, which is not the start of an allocation", addr)
}

// find returns the allocation containing [addr, addr+n), or nil.
func (d *Device) find(addr uint64, n int) *allocation {
	as := d.allocs
	i := sort.Search(len(as), func(i int) bool { return as[i].end() > addr })
	if i < len(as) && as[i].addr <= addr && fits(addr-as[i].addr, n, as[i].size) {
		return as[i]
	}
	return nil
}

// describe says where addr lies relative to the nearest allocation.
func (d *Device) describe(addr uint64) string {
	as := d.allocs
	if len(as) == 0 {
		return "no allocations exist"
	}
	i := sort.Search(len(as), func(i int) bool { return as[i].end() > addr })
	var best *allocation
	var dist uint64
	if i < len(as) {
		best, dist = as[i], as[i].addr-min(addr, as[i].addr)
		if as[i].addr <= addr {
			return fmt.Sprintf("%d bytes into %v", addr-as[i].addr, as[i])
		}
	}
	if i > 0 && (best == nil || addr-as[i-1].end() < dist) {
		return fmt.Sprintf("%d bytes past the end of %v", addr-as[i-1].end(), as[i-1])
	}
	return fmt.Sprintf("%d bytes before %v", dist, best)
}

func (d *Device) span(addr uint64, n int, what string) (*allocation, int, error) {
	d.mu.Lock()
	a := d.find(addr, n)
	if a != nil {
		a.materialize()
	}
	d.mu.Unlock()
	if a == nil {
		d.mu.Lock()
		where := d.describe(addr)
		d.mu.Unlock()
		return nil, 0, fmt.Errorf("sim: %s of %d bytes at %#x out of bounds: %s", what, n, addr, where)
	}
	return a, int(addr - a.addr), nil
}

// Write copies host bytes to device memory at addr and marks them written.
func (d *Device) Write(addr uint64, data []byte) error {
	a, off, err := d.span(addr, len(data), "write")
	if err != nil {
		return err
	}
	copy(a.data[off:], data)
	if a.init != nil {
		for i := range data {
			a.init[off+i] = 1
		}
	}
	return nil
}

// Read copies device memory at addr to the host.
func (d *Device) Read(addr uint64, data []byte) error {
	a, off, err := d.span(addr, len(data), "read")
	if err != nil {
		return err
	}
	copy(data, a.data[off:])
	return nil
}

// Memset sets n bytes at addr to v and marks them written.
func (d *Device) Memset(addr uint64, v byte, n int) error {
	a, off, err := d.span(addr, n, "memset")
	if err != nil {
		return err
	}
	for i := off; i < off+n; i++ {
		a.data[i] = v
	}
	if a.init != nil {
		for i := off; i < off+n; i++ {
			a.init[i] = 1
		}
	}
	return nil
}

// Copy copies n bytes between device allocations; bytes never written stay
// marked as never written at the destination.
func (d *Device) Copy(dst, src uint64, n int) error {
	sa, soff, err := d.span(src, n, "copy source")
	if err != nil {
		return err
	}
	da, doff, err := d.span(dst, n, "copy destination")
	if err != nil {
		return err
	}
	copy(da.data[doff:doff+n], sa.data[soff:soff+n])
	switch {
	case da.init == nil:
	case sa.init == nil:
		for i := doff; i < doff+n; i++ {
			da.init[i] = 1
		}
	default:
		copy(da.init[doff:doff+n], sa.init[soff:soff+n])
	}
	return nil
}

// materializeAll gives every lazy module variable its memory, so that a
// launch (whose blocks run in parallel) never has to.
func (d *Device) materializeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.allocs {
		a.materialize()
	}
}

// Allocated is the number of bytes currently allocated (module variables included).
func (d *Device) Allocated() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return int64(d.total)
}

// Label names the allocation starting at addr in check messages, e.g. after
// the kernel parameter or file it holds.
func (d *Device) Label(addr uint64, label string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.allocs {
		if a.addr == addr && a.name == "" {
			a.label = label
			return nil
		}
	}
	return fmt.Errorf("sim: label of %#x, which is not the start of an allocation", addr)
}

// Close frees the module's .global and .const variables; the module must
// not be launched afterwards.
func (m *Module) Close() {
	d := m.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	keep := d.allocs[:0]
	for _, a := range d.allocs {
		if m.globals[a.name] == a {
			d.total -= uint64(a.size)
			continue
		}
		keep = append(keep, a)
	}
	clear(d.allocs[len(keep):])
	d.allocs = keep
	m.globals = nil
}
