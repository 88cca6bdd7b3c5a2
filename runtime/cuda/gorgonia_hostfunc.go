//go:build gorgonia

package cuda

// cuLaunchHostFunc for the gorgonia.org/cu driver, which does not wrap it:
// the driver calls gcompHostFunc, exported to C, with a C word holding the
// number of the Go function to run (a Go pointer must not pass through C).

/*
#include <stdlib.h>
#include <stdint.h>
#include <cuda.h>
extern void gcompHostFunc(void *);
*/
import "C"

import "unsafe"

//export gcompHostFunc
func gcompHostFunc(userData unsafe.Pointer) {
	id := uintptr(*(*C.uintptr_t)(userData))
	C.free(userData)
	runHostFunc(id)
}

func (g *gorgoniaDriver) LaunchHostFunc(s Stream, f func()) error {
	id := registerHostFunc(f)
	word := C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
	*(*C.uintptr_t)(word) = C.uintptr_t(id)
	if r := C.cuLaunchHostFunc(g.cStream(s), C.CUhostFn(C.gcompHostFunc), word); r != C.CUDA_SUCCESS {
		C.free(word)
		dropHostFunc(id)
		return newError(g, "cuLaunchHostFunc", Result(r))
	}
	return nil
}
