package nvvm

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
)

// borrowed reports whether k takes a template this package has no counterpart for, whose
// kernels codegen/backend's nvvm producer takes from codegen/ptx rather than refuse the model:
// the tensor-core GEMM over a quantized weight, the tensor-core attention forward (f16/bf16, f32
// under tf32) that writes its rows' log-sum-exp beside the result, and dk/dv and dq on tensor cores
// (attnmma.FitsGrad, FitsGradWide, FitsGradDQ). This package's own templates for the latter two would compute other bits
// than codegen/ptx's (CUDA-core sums), so they are not used there. The launch records it
// (Producer "ptx" and a note); both producers share names, parameters and launches, so one plan
// runs the merged module.
func borrowed(k plan.Kernel, t plan.Target) bool {
	return borrowedTemplate(k, t) != ""
}

// borrowedTemplate names the codegen/ptx template a borrowed kernel takes, or is "".
func borrowedTemplate(k plan.Kernel, t plan.Target) string {
	switch plan.Template(k) {
	case "attention backward": // attention_lse or attention_grad, or a forward writing its LSE
		if op, ok := plan.BackwardAttention(k.Graph); ok && (attnmma.FitsGrad(op) || attnmma.FitsGradWide(op)) {
			return "tensor-core attention dk/dv"
		}
		if op, ok := plan.BackwardAttention(k.Graph); ok && attnmma.FitsGradDQ(op) {
			return "tensor-core attention dq"
		}
		if lseMMA(k, t) {
			return "log-sum-exp writing tensor-core attention"
		}
	case "contraction":
		if plan.QuantizedMMA(k) {
			return "quantized tensor-core GEMM"
		}
	}
	return ""
}

// lseMMA reports whether k is an attention forward writing its rows' log-sum-exp that
// codegen/ptx runs on tensor cores (attnmma.Takes).
func lseMMA(k plan.Kernel, t plan.Target) bool {
	p, ok := plan.PlanAttention(k.Graph)
	if !ok || splitkv.AppendedRows(p.Op) != 0 || !attnmma.Takes(p.Op, t.TF32) {
		return false
	}
	lse, err := plan.ForwardLSE(k.Graph, p.Op)
	return err == nil && lse != nil
}

// borrowedNote is the note on a launch whose entry codegen/ptx wrote.
func borrowedNote(k plan.Kernel, t plan.Target) string {
	return "the NVVM producer has no " + borrowedTemplate(k, t) + " template yet: this entry is codegen/ptx's"
}

// Lacks reports whether k takes one of codegen/ptx's templates this package has no counterpart
// for under target t (Module refuses it), and the note for the launch of codegen/ptx's entry a
// caller takes instead.
func Lacks(k plan.Kernel, t plan.Target) (note string, ok bool) {
	if !borrowed(k, t) {
		return "", false
	}
	return borrowedNote(k, t), true
}

// Module lowers kernels to NVVM IR and compiles it with libNVVM (lower). A kernel of a template
// this package lacks is refused (Refused; Lacks): codegen/backend's nvvm producer takes
// codegen/ptx's entry for it. With IROnly every kernel is lowered as the dispatch takes it.
func (p *Producer) Module(kernels []plan.Kernel, t plan.Target) (string, []plan.Launch, error) {
	if !p.IROnly {
		for _, k := range kernels {
			if borrowed(k, t) {
				return "", nil, fmt.Errorf("%s: the %s template %s (codegen/backend's nvvm producer takes codegen/ptx's entry)", k.Name, borrowedTemplate(k, t), refusedText)
			}
		}
	}
	return p.lower(kernels, t)
}
