// Package nvvm is gcomp's second code generator: it lowers the same kernels as codegen/ptx to
// NVVM IR (LLVM IR for the NVPTX target, built with github.com/llir/llvm) and has NVIDIA's
// libNVVM (package libnvvm) compile that to PTX. The kernels keep codegen/ptx's names,
// parameters and launch tiling (plan.Template, plan.LoopPlan and plan.Params decide both), so a
// launch plan serves either producer's PTX unchanged:
//
//	ll, launches, err := nvvm.IR(kernels, plan.Target{SM: 80})      // the NVVM IR module
//	p := &nvvm.Producer{}                                           // libNVVM looked up lazily
//	text, launches, err := p.Module(kernels, plan.Target{SM: 80})    // PTX from libNVVM
//
// The module declares the 64-bit NVPTX datalayout with i128 spelled out (libNVVM 11.8 rejects
// one without), triple nvptx64-nvidia-cuda, marks each kernel in !nvvm.annotations and declares
// !nvvmir.version 1.8 (CUDA 11.8). Special registers are llvm.nvvm.read.ptx.sreg.* intrinsics;
// transcendental ops call NVIDIA's libdevice (__nv_expf and friends), which Producer links from
// the CUDA toolkit's libdevice.10.bc. libNVVM runs with -fma=0 -prec-div=1 -prec-sqrt=1 -ftz=0,
// so every IEEE operation rounds once, as the op table and codegen/ptx's .rn instructions do.
//
// Templates: the elementwise loop (grid-stride, element groups of plan.LoopPlan's width, with
// broadcast, transpose, reshape, slice, pad, concat, iota, constants, select, gather and
// pooling fused; a nearest upsampling and a concat along an outer axis keep the group's vector
// loads, repeat.go), the transpose tile (plan.TransposePlan), the row, column and split reductions
// (plan.ReducePlan), the direct contraction (plan.ContractionPlan), the staged loop for pooling
// and concats (plan.StagedPlan), the tiled FFMA and tensor-core (f16, bf16, tf32; over a quantized weight: qmma.go) matmul and
// implicit-GEMM conv2d with their epilogues, pooled ones included (plan.GEMMPlan; cp.async,
// ldmatrix, mma.sync and cvt.rna.tf32 as one-instruction inline assembly, which libNVVM 11.8
// has no intrinsics for), the persistent kernel, the CUDA-core, split-KV (appending the cache
// rows or not) and tensor-core (f16, bf16, tf32; writing the rows' log-sum-exp or not) attention
// templates and attention's backward on CUDA cores and, for dk/dv where attnmma.FitsGradWide
// holds and dq where FitsGradDQ does, on tensor cores (plan.PlanAttention, splitkv.Of, attnmma, plan.PlanAttentionOp; bit for bit
// codegen/ptx's) and update_slice's update template (plan.UpdatePlan); GEMVs, with a norm
// prologue or not, run in the direct template. A kernel no template takes is an error naming the
// kernel and the template, never a silent fallback to the PTX emitter. The templates it lacks
// (Lacks: tensor-core products reading a broadcast at symbolic sizes in their epilogue; fallback.go) are refused,
// and codegen/backend's nvvm producer takes codegen/ptx's entries for them, its launches saying
// so. Kernels at symbolic sizes (plan.Kernel.Symbolic; sym*.go) take the loop, the row
// reduction, the tiles, the folds of the rows (column reductions, GEMMs whose K is the rows), the
// update template and the persistent kernel with size parameters, and the direct template for a
// GEMV, with codegen/ptx's parameters, launches and work. The plans it shares with codegen/ptx
// are codegen/plan's: this package never imports codegen/ptx.
package nvvm
