package attnmma

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

const (
	Rows    = 64  // query rows per block, 16 per warp
	Keys    = 64  // keys per shared-memory tile of K and V
	Threads = 128 // 4 warps
)

// Fits reports whether attention op v runs on tensor cores: f16 or bf16 operands, at least 16
// query rows (fewer leave most of a 16-row mma tile empty), at least one key, head dims E and
// Ev that are multiples of 16 up to 128, and K and V read along a contiguous head dim (cp.async
// copies runs of it).
func Fits(v *ir.Value) bool {
	if v.Op != ops.AttentionOp || len(v.Args) < 3 {
		return false
	}
	q, k, val := v.Args[0].Type.Shape, v.Args[1].Type.Shape, v.Args[2].Type.Shape
	if len(q) != 4 || len(k) != 4 || len(val) != 4 {
		return false
	}
	if d := v.Type.DType; d != ir.F16 && d != ir.BF16 || q[0] == 0 || q[1] == 0 || q[2] < 16 || k[2] == 0 {
		return false
	}
	for _, e := range []int{k[3], val[3]} {
		if e == 0 || e%16 != 0 || e > 128 {
			return false
		}
	}
	for _, a := range v.Args[1:3] {
		if _, _, st, ok := ops.StridedView(a); !ok || st[3] != 1 {
			return false
		}
	}
	return true
}

// Blocks is the template's grid for attention op v: a block per Rows query rows of a head.
func Blocks(v *ir.Value) int {
	q := v.Args[0].Type.Shape
	return q[0] * q[1] * ((q[2] + Rows - 1) / Rows)
}
