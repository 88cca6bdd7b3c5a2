// Package attnmma decides which attention ops (ops.AttentionOp) run on the tensor-core
// attention template (FlashAttention-2's forward on mma.sync) and the shape of its blocks.
//
// The decision lives here, apart from the code that emits the kernel, because two packages must
// agree on it: codegen/ptx chooses the template with Fits (Takes: FitsTF32 too, for f32 under
// the compiler's tf32 option), and the passes' cost model counts its blocks (Rows query rows
// each) and takes the 16-bit tensor-core peak for it (the tf32 peak for FitsTF32's). FitsGrad
// and GradBlocks do the same for the backward's dk/dv kernel on tensor cores, FitsGradWide for
// its wider form (head dims up to 128, the additive bias; GradRowTile its row tile) and
// FitsGradDQ and GradDQBlocks for dq; GradTakes asks all three.
//
//	attnmma.Fits(op) // q, k, v f16[1,12,2048,64], causal: true
//	// ⌈2048/Rows⌉·12 = 384 blocks of Threads threads
package attnmma
