package nvvm

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// For the external tests (train_test.go), which build train steps: package train imports this
// one through the compiler.

// KernelOf is kernelOf.
func KernelOf(kn *passes.Kernel, name string) plan.Kernel { return kernelOf(kn, name) }

// CheckKernels is supported then checkModule: the kernels the producer refuses are returned.
func CheckKernels(t *testing.T, kernels []plan.Kernel, seed uint64) (refused []string) {
	t.Helper()
	p := requireProducer(t)
	yes, no := supported(t, kernels)
	checkModule(t, p, yes, seed)
	return no
}

// For fallback_test.go, which runs codegen/backend's nvvm producer (it imports this package).

// RequireProducer is requireProducer.
func RequireProducer(t *testing.T) *Producer { return requireProducer(t) }

// Assemble is assemble.
func Assemble(t *testing.T, text string, kernels []plan.Kernel) { assemble(t, text, kernels) }

// AttentionGradGraph is attnGradGraph (wrt q, k, v or "kv") of a causal attention over
// [1, 2, 64, 64] queries, 2 KV heads and 48 keys, operands of dtype d.
func AttentionGradGraph(t *testing.T, d ir.DType, wrt string) *ir.Graph {
	return attnGradGraph(t, attnCase{1, 2, 2, 64, 48, 64, 64, ops.MaskCausal, nil, nil, d}, wrt)
}

// AttentionGradBiasGraph is AttentionGradGraph at head dim e, with the additive bias where e is
// at most 96.
func AttentionGradBiasGraph(t *testing.T, d ir.DType, e int, wrt string) *ir.Graph {
	var bias []int
	if e <= 96 {
		bias = []int{1, 2, 64, 48}
	}
	return attnGradGraph(t, attnCase{1, 2, 2, 64, 48, e, e, ops.MaskCausal, bias, nil, d}, wrt)
}

// SeqSizes is seqSizes (symstride_test.go).
func SeqSizes(g, prev *ir.Graph, bound int) map[*ir.Value][]sym.Expr { return seqSizes(g, prev, bound) }
