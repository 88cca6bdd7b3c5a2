// Package executor runs a compiled gcomp artifact (a PTX module and its
// launch plan) on a Device: it allocates the arena, the parameter and I/O
// buffers and the kernels' scratch space, binds weights, packs each kernel's
// arguments in .param order, launches the kernels in plan order and copies the
// outputs back.
//
// The Device interface is deliberately small so that the PTX simulator
// (runtime/simdev) and the CUDA driver (runtime/cuda) share all of this code:
// the simulator's tests cover what a GPU run does above the driver calls.
package executor
