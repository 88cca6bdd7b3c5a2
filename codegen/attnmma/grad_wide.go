package attnmma

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// GradDQKeys is the key tile of the tensor-core dq template (its blocks are the forward's: Rows
// query rows of a head, Threads threads): 32 keys keep a warp's S and dP tiles to 16 registers
// each beside Q's and dO's fragments and dq's accumulators at head dim 128.
const GradDQKeys = 32

// GradWideMaxDim is the widest head dim FitsGradWide takes, and GradBiasMaxDim the widest it
// takes with the additive bias: at 128 the bias's addresses and loads beside the warp's K and V
// fragments and dk and dv accumulators (192 registers) leave ptxas sm_80 at 255 registers and
// 20 bytes of spill stores (causal, 16-row tiles), so dk and dv of a biased attention with a head
// dim over 96 stay on CUDA cores.
const (
	GradWideMaxDim = 128
	GradBiasMaxDim = 96
)

// GradRowsWide is the query-row tile of the tensor-core dk/dv template where a head dim exceeds
// 96: a warp's K and V fragments and dk and dv accumulators take 192 registers at 128, and
// GradRows rows (Sᵀ and dPᵀ: 16 registers each) left ptxas sm_80 at 255 registers with 12 bytes
// of spill stores; 16 rows halve those tiles.
const GradRowsWide = 16

// GradRowTile is the query-row tile the tensor-core dk/dv template stages for op v (FitsGrad or
// FitsGradWide): GradRows, or GradRowsWide for head dims over 96.
func GradRowTile(v *ir.Value) int {
	if max(v.Args[0].Type.Shape[3], v.Args[2].Type.Shape[3]) > 96 {
		return GradRowsWide
	}
	return GradRows
}

// FitsGradDQ reports whether the tensor-core dq template computes attention_grad op v: the
// gradient of q reading the rows' LSE, f16/bf16, mask none or causal, with or without the
// additive bias, at least one query row and one key, head dims multiples of 16 up to 128, and K
// and V read along a contiguous head dim (cp.async copies runs of it).
func FitsGradDQ(v *ir.Value) bool {
	if !gradFits(v, 128) || v.Attrs.String("wrt", "") != "q" {
		return false
	}
	q, k := v.Args[0].Type.Shape, v.Args[1].Type.Shape
	if q[1] == 0 || q[2] == 0 || k[2] == 0 {
		return false
	}
	for _, a := range v.Args[1:3] {
		if _, _, st, ok := ops.StridedView(a); !ok || st[3] != 1 {
			return false
		}
	}
	return true
}

// GradDQBlocks is the tensor-core dq template's grid for an op FitsGradDQ takes: a block per Rows
// query rows of a head, as the forward's.
func GradDQBlocks(v *ir.Value) int {
	q := v.Args[0].Type.Shape
	return q[0] * q[1] * ((q[2] + Rows - 1) / Rows)
}

// FitsGradWide reports whether the tensor-core dk/dv template computes attention_grad op v in
// its wider form: what FitsGrad takes, and also head dims up to GradWideMaxDim, with the additive
// bias up to GradBiasMaxDim. FitsGrad(v) implies FitsGradWide(v); its grid is GradBlocks.
func FitsGradWide(v *ir.Value) bool {
	if !gradFits(v, GradWideMaxDim) {
		return false
	}
	if v.Attrs.Bool("additive", false) && max(v.Args[0].Type.Shape[3], v.Args[2].Type.Shape[3]) > GradBiasMaxDim {
		return false
	}
	switch v.Attrs.String("wrt", "") {
	case "k", "v":
	default:
		return false
	}
	k := v.Args[1].Type.Shape
	if k[1] == 0 || k[2] == 0 {
		return false
	}
	_, do := ops.AttentionGradOperands(v)
	for _, a := range []*ir.Value{v.Args[0], v.Args[do]} {
		if _, _, st, ok := ops.StridedView(a); !ok || st[3] != 1 {
			return false
		}
	}
	return true
}

// GradTakes reports whether attention_grad op v runs on a tensor-core backward template (dk/dv:
// FitsGrad or FitsGradWide; dq: FitsGradDQ), and its grid.
func GradTakes(v *ir.Value) (blocks int, ok bool) {
	switch {
	case FitsGrad(v) || FitsGradWide(v):
		return GradBlocks(v), true
	case FitsGradDQ(v):
		return GradDQBlocks(v), true
	}
	return 0, false
}

// gradFits checks what every tensor-core backward template needs of attention_grad op v: its lse
// operand, f16/bf16 operands, mask none or causal, at least one batch entry, and head dims E and
// Ev multiples of 16 up to maxDim.
func gradFits(v *ir.Value, maxDim int) bool {
	if v.Op != ops.AttentionGradOp || len(v.Args) < 6 || !v.Attrs.Bool("lse", false) {
		return false
	}
	d := v.Args[0].Type.DType
	if d != ir.F16 && d != ir.BF16 {
		return false
	}
	switch v.Attrs.String("mask", "") {
	case ops.MaskNone, ops.MaskCausal:
	default:
		return false
	}
	q, k, val := v.Args[0].Type.Shape, v.Args[1].Type.Shape, v.Args[2].Type.Shape
	if len(q) != 4 || len(k) != 4 || len(val) != 4 || q[0] == 0 {
		return false
	}
	for _, e := range []int{q[3], val[3]} {
		if e == 0 || e%16 != 0 || e > maxDim {
			return false
		}
	}
	return true
}
