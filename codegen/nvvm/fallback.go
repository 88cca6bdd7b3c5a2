package nvvm

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
)

// borrowed reports whether k takes a template this package has no counterpart for, whose
// kernels codegen/backend's nvvm producer takes from codegen/ptx rather than refuse the model.
// Still borrowed (borrowedTemplate): batched products reading a view of the run's sizes in their
// epilogue beside a product whose M or batch alone is symbolic, or a view of a computed value
// (fallback_contract.go; beside a product contracting a symbolic dim or with a symbolic N, views
// of a buffer are read here, on FFMA and tensor cores: symcontract_bcast.go). Every other
// template is this package's own (docs/codegen.md, "Borrowed from codegen/ptx"). The launch
// records a borrowed entry (Producer "ptx" and a note); both producers share names, parameters
// and launches, so one plan runs the merged module.
func borrowed(k plan.Kernel, t plan.Target) bool {
	return borrowedTemplate(k, t) != ""
}

// borrowedTemplate names the codegen/ptx template a borrowed kernel takes, or is "". t is the
// target, which a template may depend on.
func borrowedTemplate(k plan.Kernel, t plan.Target) string {
	if k.Symbolic && k.Sizes != nil {
		if !plan.LayerSized(k) && plan.SymbolicConcat(k.Graph) == "" {
			return "" // a concat's kernel, fused with computation or not: symconcat*.go
		}
		if broadcastsEpilogue(k, t) { // fallback_contract.go
			return "batched product reading a broadcast at symbolic sizes in its epilogue"
		}
	}
	return ""
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
