// Package dynlib opens NVIDIA's shared libraries (the CUDA driver, NCCL, libNVVM, NVRTC) when
// the program runs, through github.com/ebitengine/purego: no cgo, and a binary that runs, and
// says what is missing, where a library is absent.
//
// It holds what every such loader does the same way: the path chosen from an explicit argument,
// then an environment variable, then a default (Path); one opening per process and path (Cache);
// and dlopen with every required function resolved or a clear error, optional ones registered
// when present (Open):
//
//	type lib struct{ cos func(float64) float64 }
//	var l lib
//	err := dynlib.Open(dynlib.Path("", "MY_LIBM", "libm.so.6"), dynlib.Spec{
//		Required: []dynlib.Func{{Name: "cos", Ptr: &l.cos}},
//		Lacks: func(sym string) error { return fmt.Errorf("this libm lacks %s", sym) },
//	})
//
// Libraries are opened on linux/amd64 and linux/arm64 only, and not at all in a build with the
// tag nocuda (a fully static binary: purego makes every binary that imports it dynamically
// linked). There Open fails with Unavailable's reason.
package dynlib
