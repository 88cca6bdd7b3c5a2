// Package cuda runs gcomp's kernels on NVIDIA GPUs through the CUDA driver
// API.
//
// Driver is the handful of driver calls the runtime makes. The default
// implementation loads libcuda.so.1 when the program runs, with
// github.com/ebitengine/purego and without cgo, so one gcomp binary builds
// everywhere (CGO_ENABLED=0 included) and uses a GPU where there is one:
//
//	drv, err := cuda.Load("")     // $GCOMP_CUDA_LIB, else libcuda.so.1 as the dynamic loader finds it
//	if errors.Is(err, cuda.ErrNoLibrary) { ... }
//	err = drv.Init()              // errors.Is(err, cuda.ErrNoDevice) without a GPU
//	dev, err := cuda.Open(drv, 0, cuda.OptionsFromEnv())
//
// Built with the tag gorgonia, Load returns instead a Driver over
// gorgonia.org/cu, which links the driver at build time (cgo, CUDA 11.8
// headers or older).
//
// Device implements executor.Device on one GPU: the device's primary
// context, one stream on which copies, memsets and launches are queued in
// order, pinned staging buffers for asynchronous writes, CUDA events to
// time launches (Options.Profile), and GCOMP_SYNC=1 to wait for and check
// every launch. Every driver failure is an error naming the call, the
// driver's error name and message, and what the device was doing: the
// kernel and its launch dimensions, the bytes requested and free, the JIT
// log of PTX the driver rejected, or the architecture a module needs.
package cuda
