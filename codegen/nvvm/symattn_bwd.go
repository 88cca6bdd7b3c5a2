package nvvm

import (
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
)

// Attention's backward on CUDA cores at symbolic sizes, as codegen/ptx's: attention_bwd.go's
// attention_lse, dq and dk/dv templates over a batch, a query length L and a key length S known
// at launch, on symattn.go's sizes (each dim its values' sizes name, then the block count; L, S
// and every operand's offset and strides computed once from them). The LSE and dq kernels take
// the forward's grid, B·H·⌈L/warps⌉; dk/dv's is a block per plan.AttentionGradKeys keys of each
// (batch, KV head), B·KVH·⌈S/AttentionGradKeys⌉, its block split at the run's S. The row tiles
// run to the run's L, keys past S are inactive, and the outputs are written contiguous at the
// run's sizes, nothing past them. The tensor-core templates run at these sizes too: dq
// (attention_bwd_dq_mma.go) with the tensor-core forward's grid and row tiles (symattn_mma.go),
// dk and dv (attention_bwd_mma.go) a block per attnmma.GradKeys keys of each (batch, KV head).

// symGradArgs appends a symbolic backward kernel's size parameters to args (symAttnArgs), with
// codegen/ptx's block counts: dk and dv's B·KVH·⌈S/AttentionGradKeys⌉ on CUDA cores and
// B·KVH·⌈S/attnmma.GradKeys⌉ (over k's batch) on tensor cores, dq's on tensor cores the
// tensor-core forward's, B·H·⌈L/attnmma.Rows⌉, the others' the CUDA-core forward's.
func symGradArgs(k plan.Kernel, p plan.AttentionPlan, keyGrid bool, args []plan.Arg) ([]plan.Arg, *plan.SymWork) {
	if !k.Symbolic {
		return args, nil
	}
	grad := p.Op.Op == ops.AttentionGradOp
	if !keyGrid {
		rows := p.Block[0] / 32
		if grad && attnmma.FitsGradDQ(p.Op) {
			rows = attnmma.Rows // dq on tensor cores (attention_bwd_dq_mma.go)
		}
		return symAttnArgs(k, p, rows, args)
	}
	q, kk := plan.SymSizes(p.Op.Args[0], k.Sizes), plan.SymSizes(p.Op.Args[1], k.Sizes)
	b, n := q[0], int64(plan.AttentionGradKeys)
	if attnmma.FitsGradWide(p.Op) { // dk and dv on tensor cores (attention_bwd_mma.go)
		b, n = kk[0], attnmma.GradKeys
	}
	return symBlockArgs(k, sym.Mul(sym.Scale(b, int64(p.KVH)), sym.Div(sym.Add(kk[2], sym.Const(n-1)), n)), args)
}

// dimSLast is S−1.
func (ag *attnGen) dimSLast() value.Value {
	if ag.sym == nil {
		return ci(ag.p.S - 1)
	}
	return ag.kg.sub(ag.sym.s, ci(1))
}

// gradKeyBlock is the tensor-core dk/dv block's (batch·KV head, key block) from its index cta at
// symbolic sizes, ⌈S/attnmma.GradKeys⌉ key blocks per (batch, KV head); for a static kernel the
// bound's (batch·KV head) of n key blocks and nil (the caller's, where the bound's code has it).
func (w *mmaAttn) gradKeyBlock(cta value.Value, n int) (bk, kb value.Value) {
	kg := w.kg
	if w.sym == nil {
		return kg.div(cta, n), nil
	}
	blocks := kg.b.NewUDiv(kg.add(w.sym.s, ci(attnmma.GradKeys-1)), ci(attnmma.GradKeys))
	return kg.b.NewUDiv(cta, blocks), kg.b.NewURem(cta, blocks)
}

// mulS is x·S.
func (ag *attnGen) mulS(x value.Value) value.Value {
	return ag.mulSize(x, ag.p.S, func() value.Value { return ag.sym.s })
}

// keyBlock splits the dk/dv kernel's block index cta into its (batch, KV head) and key block,
// ⌈S/AttentionGradKeys⌉ key blocks per (batch, KV head).
func (ag *attnGen) keyBlock(cta value.Value) (bk, kb value.Value) {
	const n = plan.AttentionGradKeys
	return ag.split(cta, ceilDiv(ag.p.S, n), func() value.Value {
		return ag.kg.b.NewUDiv(ag.kg.add(ag.sym.s, ci(n-1)), ci(n))
	})
}
