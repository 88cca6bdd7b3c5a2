package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
)

// Split-KV decoding over a symbolic batch: a decoding step's attention (a few query rows per
// head against a cache [batch, KVH, max_seq, d]) whose only symbolic size is the batch, which
// leads every operand. Its rows b < B are where they are at the bound, so the bound's code (every
// stride and offset an immediate) computes them when the grid's z is the run's batch B: the
// split is planned once for every batch up to the bound (splitkv.OfAnyBatch), the partials and
// tickets are laid out at the bound in scratch, and a (batch entry, KV head)'s last block zeroes
// its ticket, so a run at any batch leaves the scratch as it found it. B is a .u32 parameter
// after the buffers (SymWork: tile 1 along axis 2, Elements the batch's expression), and a block
// at or past it exits before touching memory. An appended cache's rows past the run are never
// written: only blocks below B write rows.

// symDecode returns the split-KV plan of symbolic attention kernel k and its batch's expression
// when it decodes over a symbolic batch (plan.SymDecodeBatch); false otherwise (the kernel takes
// the CUDA-core template at symbolic sizes, symattn.go).
func symDecode(k Kernel, p AttentionPlan) (splitkv.Plan, string, bool) {
	if !k.Symbolic || k.Sizes == nil {
		return splitkv.Plan{}, "", false
	}
	sp, batch, ok := plan.SymDecodeBatch(p.Op, k.Sizes)
	if !ok {
		return splitkv.Plan{}, "", false
	}
	return sp, batch.String(), true
}

// symDecodeBatch declares the run's batch as the kernel's size parameter (after its buffers and
// scratch) and sends a block whose batch entry is at or past it to the kernel's end; the work
// makes the grid's z the batch.
func (w *attnWriter) symDecodeBatch(k Kernel, batch string, params *[]string, args *[]Arg) *SymWork {
	param := fmt.Sprintf("%s_param_%d", k.Name, len(*args))
	*params = append(*params, "\t.param .u32 "+param)
	*args = append(*args, Arg{Kind: ArgSize, Expr: batch})
	n, z, past := w.reg("b32"), w.reg("b32"), w.reg("pred")
	w.ins("ld.param.u32", n, "["+param+"]")
	w.ins("mov.u32", z, "%ctaid.z")
	w.ins("setp.ge.u32", past, z, n)
	w.ins("@"+past+" bra.uni", "$"+w.name+"_end")
	return &SymWork{Vector: 1, MaxBlocks: 65535, Scale: 1, Tile: 1, Axis: 2, Elements: batch}
}
