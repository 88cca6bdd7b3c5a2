package nvvm

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/passes"
)

// Every kernel the pass pipeline forms for the examples that the NVVM producer takes goes
// through the differential harness; the others must be refused with the template named. The
// example's golden file keeps the NVVM IR module of the kernels taken (nvvm/module.ll) and the
// list of the refused (nvvm/unsupported.txt).
func TestExampleKernels(t *testing.T) {
	p := requireProducer(t)
	for _, m := range examples.Tutorials {
		t.Run(m.Name, func(t *testing.T) {
			if testing.Short() && m.Slow {
				t.Skip("-short: the larger examples take 5 s each")
			}
			g, err := frontend.Build(m.Name, m.Model)
			if err != nil {
				t.Fatalf("example does not build: %v", err)
			}
			res, err := passes.Run(g, passes.Options{})
			if err != nil {
				t.Fatalf("pass pipeline: %v", err)
			}
			var all []plan.Kernel
			for _, kn := range res.Kernels.Kernels {
				all = append(all, kernelOf(kn, kn.Name))
			}
			kernels, refused := supported(t, all)
			ll, _, err := IR(kernels, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			again, _, _ := IR(kernels, plan.Target{SM: 80})
			if again != ll {
				t.Error("the NVVM IR differs between two runs")
			}
			path, comment := golden.Example(filepath.Join("..", ".."), m.Name)
			golden.CheckSections(t, path, comment, "nvvm", []txtar.File{
				{Name: "module.ll", Data: []byte(ll)},
				{Name: "unsupported.txt", Data: []byte(strings.Join(refused, "\n") + "\n")},
			})
			checkModule(t, p, kernels, 0)
		})
	}
}
