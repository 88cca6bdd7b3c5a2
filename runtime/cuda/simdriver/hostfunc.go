package simdriver

import (
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/executor"
)

// Host functions run in the schedule like a launch: after the work issued to their stream
// before them and the events it waits for, on the goroutine that synchronizes. What a host
// function needs of the simulated GPU's memory it reaches through Memory, as a GPU's host
// function reaches mapped memory, without synchronizing.

// LaunchHostFunc queues f on st (cuLaunchHostFunc). A stream that records a graph records f,
// and each launch of the graph runs it again.
func (s *Driver) LaunchHostFunc(st cuda.Stream, f func()) error {
	return s.enqueue("cuLaunchHostFunc", st, func() error {
		f()
		return nil
	})
}

// Memory is the simulated GPU's memory as the work running on a stream sees it.
type Memory struct{ s *Driver }

// Memory returns the memory that host functions read and write while they run. It does not
// synchronize, so outside a host function the device's own reads and writes are the ones to use.
func (s *Driver) Memory() Memory { return Memory{s} }

// Read copies device memory at p into dst.
func (m Memory) Read(dst []byte, p executor.Ptr) error { return m.s.dev.Read(dst, p) }

// Write copies src to device memory at p.
func (m Memory) Write(p executor.Ptr, src []byte) error { return m.s.dev.Write(p, src) }

// Ran is one piece of queued work that ran: its stream and what it was, the driver call
// ("cuLaunchHostFunc", "cuEventRecord", ...) and, for a launch, the kernel
// ("cuLaunchKernel scale").
type Ran struct {
	Stream cuda.Stream
	What   string
}

// Trace returns, with Options.Trace, the work that has run so far, in the order it ran.
func (s *Driver) Trace() []Ran { return append([]Ran(nil), s.ran...) }
