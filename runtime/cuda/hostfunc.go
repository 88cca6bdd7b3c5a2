package cuda

import (
	"sync"

	"github.com/gcomp/gcomp/runtime/executor"
)

// Streams beyond the compute and upload streams, for work the device's user
// orders itself: a communication stream that waits for an event recorded
// after the kernels producing a gradient, runs an all-reduce, and records an
// event the compute stream waits for before the optimizer reads the result.
// Host functions (cuLaunchHostFunc) queue host work in a stream's order; the
// simulated collectives run that way on the simulator-backed driver.

// NewStream creates another non-blocking stream on the device. Sync waits
// for it too; Close destroys it.
func (d *Device) NewStream() (Stream, error) {
	var s Stream
	err := d.do(func() error {
		var err error
		if s, err = d.drv.StreamCreate(); err != nil {
			return d.errorf("creating a stream: %w", err)
		}
		d.extra = append(d.extra, s)
		return nil
	})
	return s, err
}

// ComputeStream is the stream Launch, Write, Zero and Record issue to.
func (d *Device) ComputeStream() Stream { return d.stream }

// RecordOn records an event on s, the compute stream or one of NewStream's.
// The event is the device's until Release, like Record's.
func (d *Device) RecordOn(s Stream) (executor.Event, error) {
	var id executor.Event
	err := d.do(func() error {
		if err := d.ownLocked(s); err != nil {
			return err
		}
		var err error
		id, err = d.recordLocked(s)
		return err
	})
	return id, err
}

// WaitOn makes the work issued to s from now on wait for e (the host does
// not wait).
func (d *Device) WaitOn(s Stream, e executor.Event) error {
	return d.do(func() error {
		if err := d.ownLocked(s); err != nil {
			return err
		}
		ev, ok := d.events[e]
		if !ok {
			return d.errorf("waiting for event %d, which the device does not hold", e)
		}
		if err := d.drv.StreamWaitEvent(s, ev); err != nil {
			return d.errorf("ordering stream %#x after an event: %w", uintptr(s), err)
		}
		return nil
	})
}

// LaunchHostFunc queues f on s: f runs once the work issued to s before it
// is done, and the work issued to s after it waits for f to return. f runs
// on a thread of the driver and must not call the device.
func (d *Device) LaunchHostFunc(s Stream, f func()) error {
	return d.do(func() error {
		if err := d.ownLocked(s); err != nil {
			return err
		}
		if d.capturing && s == d.stream { // a graph would run f again, and its number is used once
			return d.errorf("queueing a host function: the compute stream is recording a graph")
		}
		if err := d.drv.LaunchHostFunc(s, f); err != nil {
			return d.errorf("queueing a host function: %w", err)
		}
		return nil
	})
}

// SyncStream waits for the work queued on s. A failure of work on another
// stream may be reported here too (the context is shared).
func (d *Device) SyncStream(s Stream) error {
	return d.do(func() error {
		if err := d.ownLocked(s); err != nil {
			return err
		}
		if err := d.drv.StreamSynchronize(s); err != nil {
			return d.errorf("waiting for stream %#x: %w", uintptr(s), err)
		}
		return nil
	})
}

// ownLocked checks that s is one of the device's streams.
func (d *Device) ownLocked(s Stream) error {
	if s == d.stream || s != 0 && (s == d.copier || s == d.comm) {
		return nil
	}
	for _, x := range d.extra {
		if s == x {
			return nil
		}
	}
	return d.errorf("stream %#x is not one of the device's", uintptr(s))
}

// hostFuncs holds the functions queued with cuLaunchHostFunc until the
// driver calls them: the driver is given a number (userData), never a Go
// pointer.
var hostFuncs = struct {
	sync.Mutex
	next uintptr
	fns  map[uintptr]func()
}{fns: map[uintptr]func(){}}

func registerHostFunc(f func()) uintptr {
	hostFuncs.Lock()
	defer hostFuncs.Unlock()
	hostFuncs.next++
	hostFuncs.fns[hostFuncs.next] = f
	return hostFuncs.next
}

// runHostFunc runs (once) the function numbered id; the driver calls it.
func runHostFunc(id uintptr) {
	hostFuncs.Lock()
	f := hostFuncs.fns[id]
	delete(hostFuncs.fns, id)
	hostFuncs.Unlock()
	if f != nil {
		f()
	}
}

// dropHostFunc forgets a function the driver refused.
func dropHostFunc(id uintptr) {
	hostFuncs.Lock()
	delete(hostFuncs.fns, id)
	hostFuncs.Unlock()
}
