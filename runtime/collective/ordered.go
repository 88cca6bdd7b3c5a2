package collective

import (
	"errors"
	"fmt"
	"slices"
)

// StreamDevice is a simulated rank's device with CUDA streams: the CUDA
// device over the simulator-backed driver. Given to NewLocal, ServeTCP or
// DialTCP as the rank's Memory, it makes the rank's calls stream-ordered, as
// NCCL's are: a call on a non-zero stream is queued there (LaunchHostFunc)
// and, when the stream reaches it, after the work issued to the stream before
// it and the events the stream waits for, reads the send buffer, meets the
// other ranks and writes the result, all before the stream's later work
// runs. Calls on stream 0 run at once, as on a device without streams.
//
// The simulator-backed driver runs a stream's work when its device is
// synchronized, on the goroutine that synchronizes: each rank needs a
// goroutine of its own synchronizing its own device (one goroutine driving
// every rank would wait in the first rank's call for the others until the
// timeout).
type StreamDevice struct {
	// Memory is read and written by the calls on stream 0 (the device).
	Memory
	// InStream is the device memory as work on a stream sees it, read and
	// written by a queued call while it runs; it must not synchronize
	// (simdriver's Driver.Memory).
	InStream Memory
	// LaunchHostFunc queues f on stream s (cuda.Device.LaunchHostFunc): f
	// runs after the work issued to s before it, and the work issued after
	// it waits for f to return.
	LaunchHostFunc func(s Stream, f func()) error
	// SyncStream waits until s has run the work queued on it
	// (cuda.Device.SyncStream); Wait and Close call it for every stream the
	// rank's calls went to since the last Wait.
	SyncStream func(s Stream) error
}

// checkMemory refuses a rank's memory that cannot serve: none, or a
// StreamDevice missing a part.
func checkMemory(m Memory) error {
	if m == nil {
		return errors.New("no device memory")
	}
	if sd, ok := m.(*StreamDevice); ok && (sd.Memory == nil || sd.InStream == nil || sd.LaunchHostFunc == nil || sd.SyncStream == nil) {
		return errors.New("a StreamDevice needs Memory, InStream, LaunchHostFunc and SyncStream")
	}
	return nil
}

// queue queues t on stream s of the rank's device; c.mu is held. The queued
// function never takes c.mu: it runs while the device is being synchronized,
// which may be from a goroutine that issues calls.
func (c *simComm) queue(t task, s Stream) error {
	if err := c.streams.LaunchHostFunc(s, func() { c.carryOut(t, c.streams.InStream) }); err != nil {
		return fmt.Errorf("%s: rank %d: queueing the call on stream %#x: %w", t.c.Kind, c.rank, uintptr(s), err)
	}
	c.used[s] = true
	return nil
}

// syncStreams waits for the streams the rank's calls went to since the last
// time, so that those calls have run.
func (c *simComm) syncStreams() error {
	if c.streams == nil {
		return nil
	}
	c.mu.Lock()
	used := make([]Stream, 0, len(c.used))
	for s := range c.used {
		used = append(used, s)
	}
	clear(c.used)
	c.mu.Unlock()
	slices.Sort(used)
	for _, s := range used {
		if err := c.streams.SyncStream(s); err != nil {
			if aerr := c.AsyncError(); aerr != nil {
				return fmt.Errorf("%w (and the stream: %v)", aerr, err)
			}
			return fmt.Errorf("rank %d: waiting for stream %#x: %w", c.rank, uintptr(s), err)
		}
	}
	return nil
}

// StreamMemory is a rank's device that gives the simulated collective its
// own StreamDevice (runtime/simrank's): a trainer hands MemoryOf(dev) to
// NewLocal, ServeTCP or DialTCP so that the rank's calls are stream-ordered.
type StreamMemory interface {
	StreamDevice() *StreamDevice
}

// MemoryOf is the memory a rank on dev gives the simulated collective: dev's
// StreamDevice if it has one, else dev itself.
func MemoryOf(dev Memory) Memory {
	if s, ok := dev.(StreamMemory); ok {
		return s.StreamDevice()
	}
	return dev
}

// StreamOrdered reports whether c's calls on a non-zero stream run in that
// stream's order, as NCCL's do: work queued after a call on its stream, or on
// a stream made to wait for it, sees its result without the host waiting
// (Wait). The simulated communicator's are on a StreamDevice only; a Comm
// that does not say is taken not to be.
func StreamOrdered(c Comm) bool {
	o, ok := c.(interface{ StreamOrdered() bool })
	return ok && o.StreamOrdered()
}

// StreamOrdered is whether the rank's memory is a StreamDevice.
func (c *simComm) StreamOrdered() bool { return c.streams != nil }
