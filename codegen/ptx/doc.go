// Package ptx lowers fused kernels to PTX text (ISA 7.8) for sm_80 through sm_90.
//
// A kernel is a small ir.Graph: its inputs and params are the buffers the kernel reads, its
// outputs the buffers it writes, and the ops in between are what it fuses. Generate picks a
// template from the ops the graph contains and returns one .entry plus its Launch (grid, block,
// shared memory and what each .param binds); Module puts several kernels into one module:
//
//	text, launches, err := ptx.Module([]ptx.Kernel{{Name: "k0_add_relu", Graph: g}}, ptx.Target{SM: 80})
//
// Every template evaluates graph values element by element at symbolic indexes (see gen in
// expr.go): movement ops (broadcast_in_dim, transpose, reshape, slice, pad, concat) transform the
// index arithmetic and never materialize a tensor; elementwise ops compute in registers; inputs
// are loaded at the index. The templates differ in how they iterate:
//
//   - loop: one output iteration space, a grid-stride loop over groups of consecutive elements
//     with 128-bit loads and stores (groups follow broadcasts, transposes, slices and reshapes
//     where their lanes stay consecutive) and a scalar tail; pooling and gather fuse here.
//   - transpose tile: a loop kernel reading a buffer through a transpose of its contiguous dim
//     stages 32×32 tiles through shared memory.
//   - staged: a loop kernel with pooling, or a concat whose pieces lie off 32-byte sectors,
//     reads what each tile of 256 outputs needs into shared memory, sector-aligned and coalesced.
//   - row reduction: one block per row, warp shuffles and a shared-memory stage; several
//     reductions over the same rows (softmax, online; layer norm) share one kernel.
//   - split full reduction: many blocks, the last one (an integer ticket) folds the partials.
//   - column reduction: 32-column tiles, coalesced, partials combined in shared memory.
//   - matmul: 128×128 tiles, cp.async double buffering, 8×8 register blocks of FFMA, the
//     kernel's other ops as an epilogue before the single store; conv2d as an implicit GEMM on
//     the same core.
//   - tensor-core matmul: f16/bf16 matmuls and convolutions (and f32 matmuls with Target.TF32)
//     through ldmatrix and mma.sync, the epilogue staged through shared memory.
//   - direct contraction: the fallback for contractions the tiles do not take (f64, integers,
//     computed operands): one thread per result, f64 accumulation in the reference's order.
//   - persistent: Kernel.Stages (a chain of small loop and contraction kernels) run in order by
//     one block, bar.sync between stages, the values passed between them in shared memory.
//   - attention: one attention op, FlashAttention-2's online softmax with K and V tiles in shared
//     memory, operands read through strided views: f16/bf16 prefill on tensor cores, 16 query
//     rows per warp, mma.sync for q·kᵀ and p·v, cp.async tiles (attention_mma.go); a few query
//     rows against a long cache split across blocks (attention_decode.go); otherwise a warp per
//     query row on CUDA cores (attention.go). The forward writes the rows' log-sum-exp beside its
//     result when the kernel has attention_lse.
//   - attention backward: attention_lse and attention_grad (dq, dk/dv), FlashAttention-2's
//     recomputation on CUDA cores (attention_bwd.go); dk and dv of f16/bf16 on mma.sync where
//     attnmma.FitsGrad or FitsGradWide (attention_bwd_mma.go, the bias in
//     attention_bwd_bias_mma.go), dq where attnmma.FitsGradDQ (attention_bwd_dq_mma.go).
//   - update: one update_slice op (a KV cache's rows at a runtime position), elements moved as
//     raw bits; with Kernel.InPlace the output is the operand's memory and the grid covers the
//     update only (update.go).
//
// Numerics follow docs/ops.md exactly where the op is exact (every IEEE operation, casts, min/max
// with NaN propagation, integer wrapping and division); docs/codegen.md lists the error bound of
// each approximate op. Output is deterministic: the same graph gives the same bytes.
//
// Buffers must be 16-byte aligned (vector accesses rely on it); shapes are static, and every
// tensor must have fewer than 2^31 elements (indexes are 32-bit). A Launch lists what each
// .param binds: graph inputs, params and outputs by index, and scratch buffers (zero before the
// first launch, left zero). docs/codegen.md describes the templates and the numerics in full.
package ptx
