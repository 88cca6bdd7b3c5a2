//go:build gorgonia

package cuda

// CUDA graphs for the gorgonia.org/cu driver: the library wraps graph building but not stream
// capture or graph launch, so these call the driver through cgo. The C handles stay in a table
// and the executor holds their numbers (a C pointer must not round-trip through uintptr).

/*
#include <cuda.h>
*/
import "C"

import (
	"sync"
	"unsafe"
)

// cStream is s's CUstream (gorgonia.org/cu's cgo type converted to this package's).
func (g *gorgoniaDriver) cStream(s Stream) C.CUstream {
	return C.CUstream(unsafe.Pointer(get(g, g.streams, uintptr(s)).C()))
}

func (g *gorgoniaDriver) StreamBeginCapture(s Stream) error {
	return newError(g, "cuStreamBeginCapture_v2", Result(C.cuStreamBeginCapture(g.cStream(s), C.CU_STREAM_CAPTURE_MODE_GLOBAL)))
}

// graphHandles maps the numbers handed out as Graph and GraphExec to the driver's handles.
var graphHandles = struct {
	sync.Mutex
	next   uintptr
	graphs map[uintptr]C.CUgraph
	execs  map[uintptr]C.CUgraphExec
}{graphs: map[uintptr]C.CUgraph{}, execs: map[uintptr]C.CUgraphExec{}}

func (g *gorgoniaDriver) StreamEndCapture(s Stream) (Graph, error) {
	var gr C.CUgraph
	if r := C.cuStreamEndCapture(g.cStream(s), &gr); r != C.CUDA_SUCCESS {
		return 0, newError(g, "cuStreamEndCapture", Result(r))
	}
	graphHandles.Lock()
	defer graphHandles.Unlock()
	graphHandles.next++
	graphHandles.graphs[graphHandles.next] = gr
	return Graph(graphHandles.next), nil
}

func cGraph(gr Graph) C.CUgraph {
	graphHandles.Lock()
	defer graphHandles.Unlock()
	return graphHandles.graphs[uintptr(gr)]
}

func cGraphExec(e GraphExec) C.CUgraphExec {
	graphHandles.Lock()
	defer graphHandles.Unlock()
	return graphHandles.execs[uintptr(e)]
}

func (g *gorgoniaDriver) GraphInstantiate(gr Graph) (GraphExec, error) {
	var e C.CUgraphExec
	if r := C.cuGraphInstantiateWithFlags(&e, cGraph(gr), 0); r != C.CUDA_SUCCESS {
		return 0, newError(g, "cuGraphInstantiateWithFlags", Result(r))
	}
	graphHandles.Lock()
	defer graphHandles.Unlock()
	graphHandles.next++
	graphHandles.execs[graphHandles.next] = e
	return GraphExec(graphHandles.next), nil
}

func (g *gorgoniaDriver) GraphLaunch(e GraphExec, s Stream) error {
	return newError(g, "cuGraphLaunch", Result(C.cuGraphLaunch(cGraphExec(e), g.cStream(s))))
}

func (g *gorgoniaDriver) GraphExecDestroy(e GraphExec) error {
	r := C.cuGraphExecDestroy(cGraphExec(e))
	graphHandles.Lock()
	delete(graphHandles.execs, uintptr(e))
	graphHandles.Unlock()
	return newError(g, "cuGraphExecDestroy", Result(r))
}

func (g *gorgoniaDriver) GraphDestroy(gr Graph) error {
	r := C.cuGraphDestroy(cGraph(gr))
	graphHandles.Lock()
	delete(graphHandles.graphs, uintptr(gr))
	graphHandles.Unlock()
	return newError(g, "cuGraphDestroy", Result(r))
}
