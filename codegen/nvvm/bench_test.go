package nvvm

import (
	"testing"
	"time"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/passes"
)

// BenchmarkGPT2Small times both producers on the kernels of GPT-2 small (12 layers, 128 tokens)
// the NVVM producer takes: the NVVM producer's whole Module (NVVM IR, then libNVVM on the
// distinct kernels in parallel programs, merged), and apart from it libNVVM's time per distinct
// kernel compiled alone, one after another; and codegen/ptx's Module on the same kernels:
// go test ./codegen/nvvm -run '^$' -bench GPT2Small -benchtime 3x
func BenchmarkGPT2Small(b *testing.B) {
	p := requireProducer(&testing.T{})
	if _, err := p.Lib(); err != nil {
		b.Skip(err)
	}
	g, err := frontend.Build("gpt2small", gpt.GPT2Small)
	if err != nil {
		b.Skip(err)
	}
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		b.Skip(err)
	}
	var kernels []ptx.Kernel
	for _, kn := range res.Kernels.Kernels {
		k := kernelOf(kn, kn.Name)
		if _, _, err := IR([]ptx.Kernel{k}, ptx.Target{SM: 80}); err == nil {
			kernels = append(kernels, k)
		}
	}
	uniq, _, _, err := classes(kernels)
	if err != nil {
		b.Fatal(err)
	}
	var nvvmTime, libTime, ptxTime time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, _, err := p.Module(kernels, ptx.Target{SM: 80}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		for _, k := range uniq {
			m, _, err := build([]ptx.Kernel{k}, ptx.Target{SM: 80})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := compile(p.lib, k.Name, m, ptx.Target{SM: 80}); err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		if _, _, err := ptx.Module(kernels, ptx.Target{SM: 80}); err != nil {
			b.Fatal(err)
		}
		nvvmTime += t1.Sub(t0)
		libTime += t2.Sub(t1)
		ptxTime += time.Since(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(len(kernels)), "kernels")
	b.ReportMetric(float64(len(uniq)), "distinct")
	b.ReportMetric(nvvmTime.Seconds()*1e3/n, "ms-nvvm-module")
	b.ReportMetric(libTime.Seconds()*1e3/n/float64(len(uniq)), "ms-libnvvm/kernel")
	b.ReportMetric(ptxTime.Seconds()*1e3/n, "ms-ptx-emitter")
}
