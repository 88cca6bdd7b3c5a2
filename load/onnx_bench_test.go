//go:build unix

package load_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/load"
)

// BenchmarkONNX measures what `gcomp build MODEL.onnx --shape ...` spends after the file is
// read: importing the model (parsing the protobuf, checking the weights, building and verifying
// the graph) and compiling it (passes, memory plan, PTX). The model is an export too large to
// commit, named by GCOMP_ONNX_MODEL (ResNet-50: scripts/export_onnx.py OUT --models resnet50),
// with GCOMP_ONNX_SHAPE fixing its input (default input=1x3x224x224); without it the benchmark
// skips.
func BenchmarkONNX(b *testing.B) {
	path := os.Getenv("GCOMP_ONNX_MODEL")
	if path == "" {
		b.Skip("GCOMP_ONNX_MODEL names no model")
	}
	spec := os.Getenv("GCOMP_ONNX_SHAPE")
	if spec == "" {
		spec = "input=1x3x224x224"
	}
	name, shape, err := load.ParseShape(spec)
	if err != nil {
		b.Fatal(err)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	opt := load.Options{}
	opt.ONNX.Shapes = map[string][]int{name: shape}
	imp := func(b *testing.B) *load.Model {
		m, err := load.ModelSource(path, src, opt)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	b.Run("import", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			imp(b)
		}
	})
	b.Run("compile", func(b *testing.B) {
		m := imp(b)
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := compiler.Compile(m.Graph, compiler.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("import+compile", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := compiler.Compile(imp(b).Graph, compiler.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportCPU adds the process's CPU time (user and system, every thread) per op to the
// benchmark's metrics: on a shared machine wall time counts the other processes' turns too.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
