//go:build gorgonia

package cuda

// CUDA graphs for the gorgonia.org/cu driver: the library wraps graph building but not stream
// capture or graph launch, so these call the driver through cgo; handles are the C pointers.

/*
#include <cuda.h>
*/
import "C"

import "unsafe"

// cStream is s's CUstream (gorgonia.org/cu's cgo type converted to this package's).
func (g *gorgoniaDriver) cStream(s Stream) C.CUstream {
	return C.CUstream(unsafe.Pointer(get(g, g.streams, uintptr(s)).C()))
}

func (g *gorgoniaDriver) StreamBeginCapture(s Stream) error {
	return newError(g, "cuStreamBeginCapture_v2", Result(C.cuStreamBeginCapture(g.cStream(s), C.CU_STREAM_CAPTURE_MODE_GLOBAL)))
}

func (g *gorgoniaDriver) StreamEndCapture(s Stream) (Graph, error) {
	var gr C.CUgraph
	r := C.cuStreamEndCapture(g.cStream(s), &gr)
	return Graph(uintptr(unsafe.Pointer(gr))), newError(g, "cuStreamEndCapture", Result(r))
}

func (g *gorgoniaDriver) GraphInstantiate(gr Graph) (GraphExec, error) {
	var e C.CUgraphExec
	r := C.cuGraphInstantiateWithFlags(&e, C.CUgraph(unsafe.Pointer(uintptr(gr))), 0)
	return GraphExec(uintptr(unsafe.Pointer(e))), newError(g, "cuGraphInstantiateWithFlags", Result(r))
}

func (g *gorgoniaDriver) GraphLaunch(e GraphExec, s Stream) error {
	return newError(g, "cuGraphLaunch", Result(C.cuGraphLaunch(C.CUgraphExec(unsafe.Pointer(uintptr(e))), g.cStream(s))))
}

func (g *gorgoniaDriver) GraphExecDestroy(e GraphExec) error {
	return newError(g, "cuGraphExecDestroy", Result(C.cuGraphExecDestroy(C.CUgraphExec(unsafe.Pointer(uintptr(e))))))
}

func (g *gorgoniaDriver) GraphDestroy(gr Graph) error {
	return newError(g, "cuGraphDestroy", Result(C.cuGraphDestroy(C.CUgraph(unsafe.Pointer(uintptr(gr))))))
}
