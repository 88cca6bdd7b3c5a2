package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
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
// run's sizes, nothing past them. dq on tensor cores (attention_bwd_dq_mma.go) runs at these
// sizes with the tensor-core forward's grid and row tiles (symattn_mma.go); the tensor-core dk/dv
// at symbolic sizes is codegen/ptx's (symGradMMA; fallback.go borrows it).

// symGradMMA reports whether symbolic backward kernel op takes the tensor-core dk/dv template
// (attnmma.FitsGradWide, codegen/ptx's choice), which this package does not run at symbolic
// sizes: codegen/ptx's symattn_bwd_mma.go does.
func symGradMMA(op *irg.Value) bool {
	return op.Op == ops.AttentionGradOp && attnmma.FitsGradWide(op)
}

// symGradArgs appends a symbolic backward kernel's size parameters to args (symAttnArgs): the dk
// and dv kernel's block count is B·KVH·⌈S/AttentionGradKeys⌉, dq's on tensor cores the
// tensor-core forward's, B·H·⌈L/attnmma.Rows⌉, the others' the CUDA-core forward's.
func symGradArgs(k plan.Kernel, p plan.AttentionPlan, keyGrid bool, args []plan.Arg) ([]plan.Arg, *plan.SymWork, error) {
	if !k.Symbolic {
		return args, nil, nil
	}
	if symGradMMA(p.Op) {
		return nil, nil, fmt.Errorf("%s: the tensor-core dk/dv backward at symbolic sizes is codegen/ptx's (the NVVM producer borrows it)", k.Name)
	}
	if !keyGrid {
		rows := p.Block[0] / 32
		if p.Op.Op == ops.AttentionGradOp && attnmma.FitsGradDQ(p.Op) {
			rows = attnmma.Rows // dq on tensor cores (attention_bwd_dq_mma.go)
		}
		args, work := symAttnArgs(k, p, rows, args)
		return args, work, nil
	}
	q, kk := plan.SymSizes(p.Op.Args[0], k.Sizes), plan.SymSizes(p.Op.Args[1], k.Sizes)
	const n = plan.AttentionGradKeys
	blocks := sym.Mul(sym.Scale(q[0], int64(p.KVH)), sym.Div(sym.Add(kk[2], sym.Const(n-1)), n))
	args, work := symBlockArgs(k, blocks, args)
	return args, work, nil
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
