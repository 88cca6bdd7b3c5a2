package nvvm

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
)

// borrowed reports whether k takes a template this package has no counterpart for, whose
// kernels codegen/backend's nvvm producer takes from codegen/ptx rather than refuse the model:
// the split-KV attention that appends a decoding step's K and V rows to its caches, f32
// attention on tf32 tensor cores (tf32Attention), attention's backward (attention_lse and
// attention_grad) and the tensor-core GEMM over a quantized weight. The launch records it
// (Producer "ptx" and a note); both producers share names, parameters and launches, so one plan
// runs the merged module.
func borrowed(k plan.Kernel, t plan.Target) bool {
	switch plan.Template(k) {
	case "attention":
		return plan.AttentionAppends(k.Graph) || tf32Attention(k, t)
	case "attention backward":
		return true
	case "contraction":
		return plan.QuantizedMMA(k)
	}
	return false
}

// tf32Attention reports whether k is f32 attention codegen/ptx runs on tf32 tensor cores.
func tf32Attention(k plan.Kernel, t plan.Target) bool {
	p, ok := plan.PlanAttention(k.Graph)
	return ok && t.TF32 && attnmma.FitsTF32(p.Op)
}

// borrowedNote is the note on a launch whose entry codegen/ptx wrote.
func borrowedNote(k plan.Kernel) string {
	return "the NVVM producer has no " + borrowedTemplate(k) + " template yet: this entry is codegen/ptx's"
}

// borrowedTemplate names the template of a borrowed kernel.
func borrowedTemplate(k plan.Kernel) string {
	template := plan.Template(k)
	if template == "attention" {
		template = "tf32 tensor-core attention"
		if plan.AttentionAppends(k.Graph) {
			template = "cache-appending split-KV attention"
		}
	} else if template == "contraction" {
		template = "quantized tensor-core GEMM"
	}
	return template
}

// Lacks reports whether k takes one of codegen/ptx's templates this package has no counterpart
// for under target t (Module refuses it), and the note for the launch of codegen/ptx's entry a
// caller takes instead.
func Lacks(k plan.Kernel, t plan.Target) (note string, ok bool) {
	if !borrowed(k, t) {
		return "", false
	}
	return borrowedNote(k), true
}

// Module lowers kernels to NVVM IR and compiles it with libNVVM (lower). A kernel of a template
// this package lacks is refused (Refused; Lacks): codegen/backend's nvvm producer takes
// codegen/ptx's entry for it. With IROnly every kernel is lowered as the dispatch takes it.
func (p *Producer) Module(kernels []plan.Kernel, t plan.Target) (string, []plan.Launch, error) {
	if !p.IROnly {
		for _, k := range kernels {
			if borrowed(k, t) {
				return "", nil, fmt.Errorf("%s: the %s template %s (codegen/backend's nvvm producer takes codegen/ptx's entry)", k.Name, borrowedTemplate(k), refusedText)
			}
		}
	}
	return p.lower(kernels, t)
}
