package simdriver

import (
	"fmt"

	"github.com/gcomp/gcomp/runtime/cuda"
)

// CUDA graphs with the driver's semantics: a capturing stream records the work issued to it
// (launches, asynchronous copies and memsets) instead of queuing it (event records and waits on a
// capturing stream, which a GPU captures as graph nodes, are refused here); StreamEndCapture
// turns the record into a graph, GraphInstantiate into something launchable, and GraphLaunch
// queues the recorded work on a stream in its order, with the arguments it was captured with.
// Captures are global (CU_STREAM_CAPTURE_MODE_GLOBAL): while one is active, a call that would
// synchronize with the GPU (stream and event synchronization, synchronous copies and memsets,
// cuMemAlloc and cuMemFree) fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the
// capture, whose StreamEndCapture then fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.

// recorded is one piece of captured work.
type recorded struct {
	call string
	run  func() error
}

type capture struct {
	work    []recorded
	invalid bool
}

type graph struct{ work []recorded }

// capturing is the capture st records into, if any.
func (s *Driver) capturing(st cuda.Stream) *capture { return s.captures[st] }

// captureGuard fails a call that would synchronize while a capture is active, invalidating every
// active capture as the driver does in global mode.
func (s *Driver) captureGuard(call string) error {
	if len(s.captures) == 0 {
		return nil
	}
	for _, c := range s.captures {
		c.invalid = true
	}
	return simErr(call, cuda.ResultCaptureUnsupported, fmt.Errorf("operation not permitted when stream is capturing"))
}

func (s *Driver) StreamBeginCapture(st cuda.Stream) error {
	if _, ok := s.streams[st]; !ok {
		return simErr("cuStreamBeginCapture_v2", cuda.ResultInvalidHandle, fmt.Errorf("no stream %d", st))
	}
	if s.captures[st] != nil {
		return simErr("cuStreamBeginCapture_v2", cuda.ResultIllegalState, fmt.Errorf("stream %d is already capturing", st))
	}
	s.captures[st] = &capture{}
	return nil
}

func (s *Driver) StreamEndCapture(st cuda.Stream) (cuda.Graph, error) {
	c := s.captures[st]
	if c == nil {
		return 0, simErr("cuStreamEndCapture", cuda.ResultIllegalState, fmt.Errorf("stream %d is not capturing", st))
	}
	delete(s.captures, st)
	if c.invalid {
		return 0, simErr("cuStreamEndCapture", cuda.ResultCaptureInvalidated, fmt.Errorf("the capture was invalidated by an operation not permitted while capturing"))
	}
	s.lastGraph++
	s.graphs[s.lastGraph] = &graph{work: c.work}
	return s.lastGraph, nil
}

func (s *Driver) GraphInstantiate(g cuda.Graph) (cuda.GraphExec, error) {
	gr := s.graphs[g]
	if gr == nil {
		return 0, simErr("cuGraphInstantiateWithFlags", cuda.ResultInvalidHandle, fmt.Errorf("no graph %d", g))
	}
	s.lastExec++
	s.execs[s.lastExec] = &graph{work: append([]recorded(nil), gr.work...)}
	return s.lastExec, nil
}

// GraphLaunch queues the graph's work on st in captured order. Launching a graph into a capture
// (a child graph node on a GPU) is not simulated.
func (s *Driver) GraphLaunch(e cuda.GraphExec, st cuda.Stream) error {
	gr := s.execs[e]
	if gr == nil {
		return simErr("cuGraphLaunch", cuda.ResultInvalidHandle, fmt.Errorf("no executable graph %d", e))
	}
	if _, ok := s.streams[st]; !ok {
		return simErr("cuGraphLaunch", cuda.ResultInvalidHandle, fmt.Errorf("no stream %d", st))
	}
	if s.captures[st] != nil {
		return simErr("cuGraphLaunch", cuda.ResultCaptureUnsupported, fmt.Errorf("the simulator does not capture graph launches"))
	}
	for _, w := range gr.work {
		if err := s.enqueue(w.call, st, w.run); err != nil {
			return err
		}
	}
	s.graphLaunches++
	return nil
}

func (s *Driver) GraphExecDestroy(e cuda.GraphExec) error {
	if s.execs[e] == nil {
		return simErr("cuGraphExecDestroy", cuda.ResultInvalidHandle, fmt.Errorf("no executable graph %d", e))
	}
	delete(s.execs, e)
	return nil
}

func (s *Driver) GraphDestroy(g cuda.Graph) error {
	if s.graphs[g] == nil {
		return simErr("cuGraphDestroy", cuda.ResultInvalidHandle, fmt.Errorf("no graph %d", g))
	}
	delete(s.graphs, g)
	return nil
}

// GraphLaunches is how many graphs GraphLaunch has queued (tests check that replays happen).
func (s *Driver) GraphLaunches() int { return s.graphLaunches }
