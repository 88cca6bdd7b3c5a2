package backend

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/passes"
)

// BenchmarkGPT2SmallModule times GPT-2 small's whole module (12 layers, 128 tokens) from its
// kernels: codegen/ptx alone, then libNVVM for every kernel it has a template for (all of them)
// and codegen/ptx for any other, then --backend auto (both, ptxas on both modules, the
// simulator on each distinct kernel's sample):
// go test ./codegen/backend -run '^$' -bench GPT2SmallModule -benchtime 3x
func BenchmarkGPT2SmallModule(b *testing.B) {
	lib, err := libnvvm.Load("")
	if err != nil {
		b.Skip(err)
	}
	g, err := frontend.Build("gpt2small", gpt.GPT2Small)
	if err != nil {
		b.Fatal(err)
	}
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		b.Fatal(err)
	}
	kernels := kernelsOf(res)
	for _, p := range []Producer{PTX{}, &Auto{NVVM: &nvvm.Producer{LibPath: lib.Path}, PreferNVVM: true}, &Auto{NVVM: &nvvm.Producer{LibPath: lib.Path}}} {
		name := p.Name()
		if a, ok := p.(*Auto); ok && a.PreferNVVM {
			name = "nvvm-where-it-can"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				if _, _, err := p.Module(kernels, ptx.Target{SM: 80}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(kernels)), "kernels")
		})
	}
}
