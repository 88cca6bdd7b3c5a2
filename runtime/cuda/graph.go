package cuda

import (
	"fmt"

	"github.com/gcomp/gcomp/runtime/executor"
)

// The Device's executor.Graphs: a run's launches recorded on the compute stream by stream capture
// (cuStreamBeginCapture_v2 ... cuStreamEndCapture), instantiated once (cuGraphInstantiateWithFlags)
// and replayed with one cuGraphLaunch per run. A graph keeps the device addresses it was captured
// with, so the executor records one per set of buffers.

// BeginCapture starts recording the launches issued to the compute stream. Profiling and
// synchronous launches wait for each kernel, which a capture forbids: they refuse to record.
func (d *Device) BeginCapture() error {
	return d.do(func() error {
		if d.opts.Profile || d.opts.Sync {
			return d.errorf("CUDA graphs record launches without waiting for them: turn off profiling and GCOMP_CUDA_SYNC")
		}
		if err := d.drv.StreamBeginCapture(d.stream); err != nil {
			return d.errorf("starting a capture: %w", err)
		}
		d.capturing, d.captured = true, d.launches
		return nil
	})
}

// EndCapture stops recording and returns the recorded launches, ready to replay.
func (d *Device) EndCapture() (executor.Replay, error) {
	var r *replay
	err := d.do(func() error {
		if !d.capturing {
			return d.errorf("no capture was started")
		}
		n := d.launches - d.captured
		d.capturing, d.launches = false, d.captured // recorded launches have not run
		g, err := d.drv.StreamEndCapture(d.stream)
		if err != nil {
			return d.errorf("ending the capture: %w", err)
		}
		exec, err := d.drv.GraphInstantiate(g)
		if derr := d.drv.GraphDestroy(g); err == nil && derr != nil {
			err = derr
		}
		if err != nil {
			return d.errorf("instantiating the graph: %w", err)
		}
		r = &replay{d: d, exec: exec, kernels: n}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

type replay struct {
	d       *Device
	exec    GraphExec
	kernels int
	closed  bool
}

// Launch queues the recorded launches on the compute stream.
func (r *replay) Launch() error {
	d := r.d
	return d.do(func() error {
		if r.closed {
			return d.errorf("replaying a closed graph")
		}
		if err := d.drv.GraphLaunch(r.exec, d.stream); err != nil {
			return d.errorf("launching a graph of %d kernels: %w", r.kernels, err)
		}
		d.launches += r.kernels
		d.last = fmt.Sprintf("a CUDA graph of %d kernels", r.kernels)
		return nil
	})
}

// Close frees the instantiated graph.
func (r *replay) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	d := r.d
	return d.do(func() error {
		if err := d.drv.GraphExecDestroy(r.exec); err != nil {
			return d.errorf("destroying a graph: %w", err)
		}
		return nil
	})
}
