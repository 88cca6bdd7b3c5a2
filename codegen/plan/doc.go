// Package plan is the producer-independent description of kernels and their launches, which
// gcomp's two PTX producers share: codegen/ptx (PTX written directly) and codegen/nvvm (NVVM IR
// compiled by libNVVM) are siblings that both import it, and neither imports the other.
//
// A Kernel (a fused ir.Graph, or a persistent kernel's Stages) is lowered for a Target; its
// Launch says how to run the entry: grid, block, the Arg each .param binds (ArgKind: input,
// param, output, scratch, the error word of IndexChecks, a symbolic size and its SymWork), the
// notes and the producer. Kernels equal up to names share one entry (ShareKey, Rebind,
// UsersComment). The plans say how each template tiles its kernel, so both producers give a
// kernel the same name, parameters and launch and one launch plan runs either module:
//
//   - the loop template's vector groups and grid (LoopPlan, VectorWidth), views (ViewPlan) and
//     constants folded alike (CastConst, ExactInt);
//   - reductions: Reduction, its row shapes (RowShapes, RowCoords) and accumulators (Accumulator);
//   - the tiled contractions: GEMM (GEMMOperand, ConvGEMM, MMA, MMASide), which thread copies
//     what (CopyMap) and holds which accumulators (RegTileOffset, RegColStep), conv2d's geometry
//     (ConvGeometry), the direct template's stand-in for a GEMV (DirectFallback, AccType), and
//     whether a GEMM's weight is quantized (QuantizedMMA);
//   - attention (PlanAttention; BackwardAttention and PlanAttentionOp for attention_lse and
//     attention_grad; AttentionTileVector, AttentionAppends), the outputs its kernels may write
//     (ForwardLSE, GradOutputs, AttentionAppendedCaches; EmptyOutputs for any kernel),
//     update_slice (UpdateOp, UpdatePlan) and the persistent template (CheckPersistent,
//     LaneSplit, WarpGroup).
//
// Some plans are still made by codegen/ptx's emitter itself (which contraction template takes a
// kernel is found by writing it; the reduction, transpose-tile, staged-loop and pooling plans
// come from the emitter's own layouts): Template, ReducePlan, TransposePlan, StagedPlan,
// PoolGeometry, ContractionPlan, GEMMPlan and Generate ask what codegen/ptx registers when it is
// linked in (emitter.go). Moving those decisions here is the next step.
//
// codegen/ptx keeps its own names for what moved here (type aliases such as
// `type Kernel = plan.Kernel`, constants and one-line forwarders in its plans.go), so its code and
// its callers (compiler, backend, runtime, tests) read as before; codegen/nvvm names this
// package's. The import graph is checked by TestProducersAreSiblings.
package plan
