package attnmma

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

const (
	Rows    = 64  // query rows per block, 16 per warp
	Keys    = 64  // keys per shared-memory tile of K and V
	Threads = 128 // 4 warps
	// KeysTF32 is the key tile of f32 operands on tf32 tensor cores: K and V tiles of 4-byte
	// elements (head dims up to 128) fit the 48 KB of static shared memory at 32 keys.
	KeysTF32 = 32
)

// Fits reports whether attention op v runs on tensor cores: f16 or bf16 operands, at least 16
// query rows (fewer leave most of a 16-row mma tile empty), at least one key, head dims E and
// Ev that are multiples of 16 up to 128, and K and V read along a contiguous head dim (cp.async
// copies runs of it).
func Fits(v *ir.Value) bool {
	d := v.Type.DType
	return (d == ir.F16 || d == ir.BF16) && shapeFits(v)
}

// FitsTF32 reports whether f32 attention op v runs on tf32 tensor cores (mma.sync m16n8k8, both
// products' operands rounded to tf32) when the compiler's tf32 option is on: the shapes Fits
// takes, in f32.
func FitsTF32(v *ir.Value) bool { return v.Type.DType == ir.F32 && shapeFits(v) }

// Takes reports whether attention op v runs on the tensor-core template, tf32 saying whether
// f32 operands may take tf32 tensor cores.
func Takes(v *ir.Value, tf32 bool) bool { return Fits(v) || tf32 && FitsTF32(v) }

// shapeFits checks Fits's conditions but the dtype.
func shapeFits(v *ir.Value) bool {
	if v.Op != ops.AttentionOp || len(v.Args) < 3 {
		return false
	}
	q, k, val := v.Args[0].Type.Shape, v.Args[1].Type.Shape, v.Args[2].Type.Shape
	if len(q) != 4 || len(k) != 4 || len(val) != 4 {
		return false
	}
	if q[0] == 0 || q[1] == 0 || q[2] < 16 || k[2] == 0 {
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
