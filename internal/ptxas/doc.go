// Package ptxas runs NVIDIA's PTX assembler, ptxas, to prove that PTX text
// assembles for a GPU architecture, and reports what the assembler says about
// each kernel: registers, spills, shared memory and stack.
//
//	res, err := ptxas.Assemble(ptx, "sm_80")
//	// res.Kernels[0] == KernelInfo{Name: "add", Registers: 10, SharedBytes: 1024}
//
// Find locates the binary: $GCOMP_PTXAS, then .cache/cuda under the module
// root (where scripts/fetch-cuda-tools.sh unpacks it), then PATH. Tests call
// Require, which skips when ptxas is missing unless GCOMP_REQUIRE_PTXAS=1
// demands it (as CI does).
//
// CUDA 11.8's ptxas stops at PTX ISA 7.8. Find12 locates CUDA 12.4's
// ($GCOMP_PTXAS12, then .cache/cuda12, fetched by fetch-cuda-tools.sh
// --cuda12), which Assemble uses for what only it knows: sm_89 (whose fp8 cvt
// needs PTX ISA 8.1), sm_90a and PTX above 7.8 (Needs12). Require12 is its
// Require.
package ptxas
