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
package ptxas
