// Package simrank opens a simulated GPU for data-parallel rehearsal ("sim:N" in a device list):
// runtime/cuda's device over the simulator-backed driver (runtime/cuda/simdriver), so that a
// rank runs the CUDA code path a GPU rank runs (streams, events, a communication stream, queued
// work run in the driver's schedule), and whose simulated collectives (runtime/collective) are
// queued on its streams as NCCL's are on a GPU's. It is a test double of a GPU with NCCL, never
// the engine on GPUs.
package simrank
