package nvvm

import (
	"github.com/llir/llvm/ir/enum"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
)

// Split-KV decoding over a symbolic batch, as codegen/ptx's symattn_decode.go: a decoding step's
// attention whose only symbolic size is the batch leading every operand (plan.SymDecodeBatch)
// runs the bound's split-KV code (attention_decode.go: every stride and offset an immediate) with
// the grid's z the run's batch. The split is planned once for every batch up to the bound
// (splitkv.OfAnyBatch), the partials and tickets lie at the bound in scratch, and a (batch entry,
// KV head)'s last block zeroes its ticket, so a run at any batch leaves the scratch as it found
// it. The batch is an i32 parameter after the buffers and the scratch (SymWork: tile 1 along axis
// 2, Elements its expression), and a block at or past it returns before touching memory.

// symDecodeArgs appends the run's batch to a symbolic split-KV kernel's parameters and returns
// its work: the batch along the grid's z.
func symDecodeArgs(batch string, args []plan.Arg) ([]plan.Arg, *plan.SymWork) {
	args = append(args, plan.Arg{Kind: plan.ArgSize, Expr: batch})
	return args, &plan.SymWork{Vector: 1, MaxBlocks: 65535, Scale: 1, Tile: 1, Axis: 2, Elements: batch}
}

// exitPastBatch returns from a block whose batch entry (the grid's z) is at or past the run's
// batch, the kernel's size parameter.
func (ag *attnGen) exitPastBatch() {
	kg := ag.kg
	past := kg.b.NewICmp(enum.IPredUGE, kg.sreg("ctaid.z"), kg.size)
	exit, on := kg.block("past_batch"), kg.block("in_batch")
	kg.b.NewCondBr(past, exit, on)
	exit.NewRet(nil)
	kg.b = on
}

// symDecodePlan is attention kernel k's split-KV plan and its batch's expression ("" at the
// bound's sizes), and whether it decodes: at the bound's sizes splitkv.Of's, at symbolic sizes
// over a batch alone plan.SymDecodeBatch's.
func symDecodePlan(k plan.Kernel, p plan.AttentionPlan) (splitkv.Plan, string, bool) {
	if !k.Symbolic {
		sp, ok := splitkv.Of(p.Op)
		return sp, "", ok
	}
	sp, batch, ok := plan.SymDecodeBatch(p.Op, k.Sizes)
	if !ok {
		return splitkv.Plan{}, "", false
	}
	return sp, batch.String(), true
}
