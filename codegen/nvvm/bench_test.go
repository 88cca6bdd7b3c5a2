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
// the NVVM producer takes, with libNVVM's share and its time per kernel reported apart:
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
	var irTime, libTime, ptxTime time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		m, _, err := build(kernels, ptx.Target{SM: 80})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, _, err := compile(p.lib, "gpt2small", m, ptx.Target{SM: 80}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, _, err := ptx.Module(kernels, ptx.Target{SM: 80}); err != nil {
			b.Fatal(err)
		}
		irTime += t1.Sub(t0)
		libTime += t2.Sub(t1)
		ptxTime += time.Since(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(len(kernels)), "kernels")
	b.ReportMetric(irTime.Seconds()*1e3/n, "ms-nvvm-ir")
	b.ReportMetric(libTime.Seconds()*1e3/n, "ms-libnvvm")
	b.ReportMetric(libTime.Seconds()*1e3/n/float64(len(kernels)), "ms-libnvvm/kernel")
	b.ReportMetric(ptxTime.Seconds()*1e3/n, "ms-ptx-emitter")
}
