package nvvm

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
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
