package passes

import (
	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/codegen/qmma"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Weight-only quantization: a dequantize whose every user is the weight (rhs) of a product the
// GEMV template or the quantized tensor-core GEMM (codegen/qmma: 16-bit operands, more rows)
// takes joins each of those kernels as part of the operand they read (a prologue, like a
// view), so the kernel reads the int8 or packed int4 weight and its scales, never a float copy
// of the weight. Any other dequantize is a kernel of its own, computed on every run into a
// planned buffer (the bindtime pass leaves it per-run), so the device holds the integer
// weights only.

// quantizedWeight places v in the contraction kernels that consume it as their weight, if
// every consumer group is one that reads it so, and reports whether it did: a dequantize read
// by GEMV templates (gemv.Fits) or by the quantized tensor-core GEMM (qmma.Fits), or the cast
// of an f32 dequantize to the product's 16-bit dtype (autocast's bf16 weight), which both
// templates compute exactly (the f32 product, then the cast's rounding), and then that
// dequantize too, in the same kernels.
func (f *fuser) quantizedWeight(v *ir.Value, cgs []*group) bool {
	if f.eager || f.output[v] || len(cgs) == 0 {
		return false
	}
	dq := v
	if v.Op == "cast" {
		dq = v.Args[0]
		if len(f.users[dq]) != 1 || f.output[dq] {
			return false
		}
	}
	if dq.Op != ops.DequantizeOp || !bufferViews(dq.Args) {
		return false
	}
	for _, u := range f.users[v] {
		if v.Op == ops.DequantizeOp && u.Op == "cast" {
			// v's cast is a prologue of each of the groups (placed first: users come later)
			for _, gr := range cgs {
				if !gr.prologue[u] {
					return false
				}
			}
			continue
		}
		if u.Op != "dot_general" || u.Args[0] == v || u.Args[1] != v {
			return false
		}
		if _, ok := qmma.Fits(u); ok {
			continue
		}
		if _, ok := gemv.Fits(u); !ok {
			return false
		}
	}
	for _, gr := range cgs {
		if gr.kind != Contraction || gr.contraction.Args[1] != v && !gr.prologue[gr.contraction.Args[1]] {
			return false
		}
	}
	for _, gr := range cgs {
		gr.views[v], gr.prologue[v] = true, true
		f.dups[v] = append(f.dups[v], gr)
	}
	return true
}

// bufferViews reports whether every value is a graph input or parameter read through views,
// or a cast of a parameter (autocast's f16 scales, autocast_quant.go), which a bind-time kernel
// of its own writes once.
func bufferViews(vs []*ir.Value) bool {
	for _, v := range vs {
		for ; v.Op != ir.OpInput && v.Op != ir.OpParam; v = v.Args[0] {
			if v.Op == "cast" && v.Args[0].Op == ir.OpParam {
				break
			}
			if !isView(v.Op) {
				return false
			}
		}
	}
	return true
}

// computesDequantize reports whether kernel k computes a dequantize (fused into a product or
// on its own): such a kernel runs per run, so the device keeps the integer weights only.
func computesDequantize(k *Kernel) bool {
	if k.Body == nil {
		return false
	}
	for _, v := range k.Body.Values {
		if v.Op == ops.DequantizeOp {
			return true
		}
	}
	return false
}
