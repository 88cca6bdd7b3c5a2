package nvvm

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
)

// borrowed reports whether k takes a template this package has no counterpart for, whose
// kernels codegen/backend's nvvm producer takes from codegen/ptx rather than refuse the model:
// the tensor-core GEMM over a quantized weight (plan.QuantizedMMA), split-KV decoding over a
// symbolic cache length (codegen/ptx's symattn_decode_len.go) and concats of views (codegen/ptx's
// symconcat.go: a cache grown by concat) at symbolic sizes, a conv's weight gradient folding its
// symbolic batch (codegen/ptx's symconv.go), batched products contracting a symbolic dim that is
// not the rows or with a symbolic free dim on the right (fallback_contract.go), row reductions
// of a symbolic last dim and loops broadcasting along it (fallback_rowlen.go), and a norm GEMV writing its prologue's rows (codegen/ptx's
// gemvnormout.go: the decode step's embeddings) or at symbolic sizes (a packed decode step's:
// codegen/ptx's symgemvnorm.go). Copies, GEMMs
// over views, the attention forward on CUDA cores and tensor cores (writing its log-sum-exp too),
// its backward on CUDA cores and tensor cores (attention_lse, dq, dk and dv: symattn_bwd.go),
// split-KV decoding over a symbolic batch, folds of strided operands, over scattered axes
// (BatchNorm's statistics) and through views (a weight gradient of attention's heads merged
// back), the KV cache write, persistent kernels at symbolic sizes and the row loops and
// persistent stages reading or writing layers of stacked buffers at offsets of the run's rows
// are this package's own (symstride*.go, symattn*.go, symfold*.go, symupdate.go,
// sympersist.go, symlayer.go). The launch records it (Producer "ptx" and a note); both producers share names,
// parameters and launches, so one plan runs the merged module. (The tensor-core attention forward writing its rows' log-sum-exp, dk/dv
// and dq on tensor cores, once borrowed, are attention_lse_mma.go's, attention_bwd_mma.go's and
// attention_bwd_dq_mma.go's.)
func borrowed(k plan.Kernel, t plan.Target) bool {
	return borrowedTemplate(k, t) != ""
}

// borrowedTemplate names the codegen/ptx template a borrowed kernel takes, or is "". t is the
// target, which a template may depend on.
func borrowedTemplate(k plan.Kernel, t plan.Target) string {
	if plan.FoldsConv(k) { // before the stages' layers: its stage has sizes too
		return "conv weight gradient folding its symbolic batch"
	}
	if k.Symbolic && k.Sizes != nil {
		if decodesLength(k) { // symattn_decode.go
			return "split-KV decoding over a symbolic cache length"
		}
		if plan.SymbolicConcat(k.Graph) == "" { // codegen/ptx's symconcat.go
			return "symbolic concat"
		}
		if rowLength(k) { // fallback_rowlen.go
			return "row reduction over a symbolic row length"
		}
	}
	switch plan.Template(k) {
	case "contraction":
		if plan.QuantizedMMA(k) {
			return "quantized tensor-core GEMM"
		}
		if contractsSymbolic(k) { // fallback_contract.go
			return "batched product contracting a symbolic dim"
		}
	case "norm gemv":
		if writesRows(k) {
			return "GEMV writing its norm prologue's rows"
		}
		if k.Symbolic {
			return "GEMV with a norm prologue at symbolic sizes" // codegen/ptx's symgemvnorm.go
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
