package passes

import (
	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Weight-only quantization: a dequantize whose every user is the weight (rhs) of a product the
// GEMV template takes joins each of those kernels as part of the operand they read (a
// prologue, like a view), so the kernel reads the int8 or packed int4 weight and its scales,
// never a float copy of the weight. Any other dequantize is a kernel of its own, computed on
// every run into a planned buffer (the bindtime pass leaves it per-run), so the device holds
// the integer weights only.

// quantizedWeight places dequantize v in the GEMV kernels that consume it, if every consumer
// group is one, and reports whether it did.
func (f *fuser) quantizedWeight(v *ir.Value, cgs []*group) bool {
	if v.Op != ops.DequantizeOp || f.eager || f.output[v] || len(cgs) == 0 || !bufferViews(v.Args) {
		return false
	}
	for _, u := range f.users[v] {
		if u.Op != "dot_general" || u.Args[0] == v || u.Args[1] != v {
			return false
		}
		if _, ok := gemv.Fits(u); !ok {
			return false
		}
	}
	for _, gr := range cgs {
		if gr.kind != Contraction || gr.contraction.Args[1] != v {
			return false
		}
	}
	for _, gr := range cgs {
		gr.views[v], gr.prologue[v] = true, true
		f.dups[v] = append(f.dups[v], gr)
	}
	return true
}

// bufferViews reports whether every value is a graph input or parameter read through views.
func bufferViews(vs []*ir.Value) bool {
	for _, v := range vs {
		for ; v.Op != ir.OpInput && v.Op != ir.OpParam; v = v.Args[0] {
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
