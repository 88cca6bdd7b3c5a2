// Package passes turns a verified graph into the program a GPU runs: canonicalization rewrites
// the graph, fusion groups its ops into kernels, the schedule orders them, the memory plan places
// intermediates in one arena, and the cost report says what it all costs.
//
// The pipeline is one ordered table of named passes (Passes lists it) with ordering constraints
// written next to it and checked when the package loads:
//
//	attention-grad                       attention_grad reads attention_lse (the fused backward's
//	                                     kernels), else → its decomposition, the softmax recomputed
//	dce, fold, simplify, cse, late-dce   rewrite the ir.Graph (exact: results stay bit-identical)
//	fp8                                  fp8 dot_general → f16 dot_general of exact casts (bit-identical), before sm_89
//	attention                            one attention op for softmax(q·kᵀ)·v (rounds once: not bit-identical)
//	fuse                                 ir.Graph → KernelGraph (docs/fusion.md has the rules)
//	schedule                             reorders kernels to lower peak live memory
//	bindtime                             marks parameter-only kernels (run at bind) and puts them first
//	persist                              runs chains of small kernels as one single-block kernel
//	memplan                              KernelGraph → Plan (arena offsets, liveness, in-place reuse;
//	                                     update_slice over a dead temp or a donated input)
//	cost                                 → Stats (kernels, DRAM bytes, flops, roofline time)
//
// With Options.AMP (autocast, autocast.go) the f32 contractions of the copy are rewritten to run
// in bf16 or f16 before the first pass; the train step applies the same rewrite (Autocast) to its
// graph. A weight's cast then reads parameters only, so bindtime marks it.
//
// Run executes the pipeline. With Options.VerifyEach the checker of each stage runs after every
// pass (ops.Verify for graphs, CheckKernels, CheckPlan); a panic inside a pass comes back as a
// one-line error naming the pass (the Go stack is appended only when GCOMP_TRACE is set);
// DumpAfter prints the IR after one pass or all.
//
// A kernel's Body is itself an ir.Graph whose inputs are the buffers it reads and whose outputs
// are the buffers it writes, so the reference interpreter can run a kernel graph kernel by kernel.
// The printed form of linreg's kernel graph:
//
//	kernels linreg {
//	  input %x : f32[8,2]
//	  param %linear.weight : f32[5,2]
//	  param %linear.bias : f32[5]
//	  kernel k0_matmul_bias contraction [8,5] reads(%x, %linear.weight, %linear.bias) writes(%y) {
//	    %0 = dot_general(%x, %linear.weight) {lhs_contract=[1], rhs_contract=[1]} : f32[8,5]
//	    %1 = broadcast_in_dim(%linear.bias) {dims=[1], shape=[8,5]} : f32[8,5]
//	    %2 = add(%0, %1) : f32[8,5]
//	    output y = %2
//	  }
//	  output %y : f32[8,5]
//	}
package passes
