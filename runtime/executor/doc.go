// Package executor runs a compiled gcomp artifact (a PTX module and its
// launch plan) on a Device: it allocates the arena, the parameter and I/O
// buffers and the kernels' scratch space, binds weights, packs each kernel's
// arguments in .param order, launches the kernels in plan order and copies the
// outputs back.
//
// The Device interface is deliberately small so that the PTX simulator
// (runtime/simdev) and the CUDA driver (runtime/cuda) share all of this code:
// the simulator's tests cover what a GPU run does above the driver calls.
//
// Runs take a context (RunContext, LaunchContext, RunImages), checked before every kernel is
// queued; a stopped run's StopError names the kernel. RunImages takes inputs and gives outputs
// as memory images, so callers holding data in the device's layout convert nothing on the host.
// Share makes a second program on another stream of the same device memory that reads the
// first one's weights: the per-run state of concurrent runs (package gcomp's session pool).
package executor
