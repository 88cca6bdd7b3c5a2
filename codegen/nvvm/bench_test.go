package nvvm

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/passes"
)

// cpuTime is the CPU time this process has used, every thread's (libNVVM's included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gpt2Kernels are GPT-2 small's kernels (12 layers, 128 tokens) that the NVVM producer takes.
func gpt2Kernels(b *testing.B) (*Producer, []plan.Kernel) {
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
	var kernels []plan.Kernel
	for _, kn := range res.Kernels.Kernels {
		k := kernelOf(kn, kn.Name)
		if _, _, err := IR([]plan.Kernel{k}, plan.Target{SM: 80}); err == nil {
			kernels = append(kernels, k)
		}
	}
	return p, kernels
}

// BenchmarkGPT2Small times both producers on the kernels of GPT-2 small the NVVM producer takes
// (all of them): the NVVM producer's whole Module (NVVM IR, then libNVVM on the distinct kernels
// in parallel programs, merged), and apart from it libNVVM on each distinct kernel compiled
// alone, one after another (each kernel's CPU time logged with -v); and codegen/ptx's Module on
// the same kernels. CPU times count every thread, libNVVM's included:
// go test ./codegen/nvvm -run '^$' -bench 'GPT2Small$' -benchtime 3x -v
func BenchmarkGPT2Small(b *testing.B) {
	p, kernels := gpt2Kernels(b)
	uniq, _, _, err := classes(kernels)
	if err != nil {
		b.Fatal(err)
	}
	var nvvmTime, nvvmCPU, libCPU, ptxCPU time.Duration
	perKernel := make([]time.Duration, len(uniq))
	b.ResetTimer()
	for range b.N {
		t0, c0 := time.Now(), cpuTime()
		if _, _, err := p.Module(kernels, plan.Target{SM: 80}); err != nil {
			b.Fatal(err)
		}
		nvvmTime += time.Since(t0)
		c1 := cpuTime()
		nvvmCPU += c1 - c0
		for i, k := range uniq {
			m, _, err := build([]plan.Kernel{k}, plan.Target{SM: 80})
			if err != nil {
				b.Fatal(err)
			}
			s := cpuTime()
			if _, _, err := compile(p.lib, k.Name, m, plan.Target{SM: 80}); err != nil {
				b.Fatal(err)
			}
			perKernel[i] += cpuTime() - s
			libCPU += cpuTime() - s
		}
		c2 := cpuTime()
		if _, _, err := ptx.Module(kernels, plan.Target{SM: 80}); err != nil {
			b.Fatal(err)
		}
		ptxCPU += cpuTime() - c2
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / n }
	for i, k := range uniq {
		b.Logf("libNVVM, %s (%s) alone: %.0f ms CPU", k.Name, plan.Template(k), ms(perKernel[i]))
	}
	b.ReportMetric(float64(len(kernels)), "kernels")
	b.ReportMetric(float64(len(uniq)), "distinct")
	b.ReportMetric(ms(nvvmTime), "ms-nvvm-module")
	b.ReportMetric(ms(nvvmCPU), "cpu-ms-nvvm-module")
	b.ReportMetric(ms(libCPU)/float64(len(uniq)), "cpu-ms-libnvvm/kernel")
	b.ReportMetric(ms(ptxCPU), "cpu-ms-ptx-emitter")
}

// BenchmarkProgramKernels times the NVVM producer's Module on GPT-2 small's kernels with
// programs of 1, 2, 4 and all the distinct kernels, on 1 and 2 threads: wall and CPU time:
// go test ./codegen/nvvm -run '^$' -bench ProgramKernels -benchtime 2x
func BenchmarkProgramKernels(b *testing.B) {
	p, kernels := gpt2Kernels(b)
	uniq, _, _, err := classes(kernels)
	if err != nil {
		b.Fatal(err)
	}
	defer func(n int) { programKernels = n }(programKernels)
	for _, size := range []int{1, 2, 4, len(uniq)} {
		for _, procs := range []int{1, 2} {
			b.Run(fmt.Sprintf("program=%d/threads=%d", size, procs), func(b *testing.B) {
				programKernels = size
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				c0 := cpuTime()
				for range b.N {
					if _, _, err := p.Module(kernels, plan.Target{SM: 80}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric((cpuTime()-c0).Seconds()*1e3/float64(b.N), "cpu-ms/op")
			})
		}
	}
}
