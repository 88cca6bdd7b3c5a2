package passes_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// BenchmarkGPT2 times the pass pipeline on the larger GPT-2 configurations (1024 tokens): its time
// should grow with the layers no faster than linearly (docs/perf.md).
//
//	go test ./passes -run '^$' -bench 'GPT2/' -benchtime 3x
func BenchmarkGPT2(b *testing.B) {
	for _, m := range gpt.GPT2Sizes[1:] {
		b.Run(m.Name, func(b *testing.B) {
			g, err := frontend.Build(m.Name, m.Model)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := passes.Run(g, passes.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reluChain is a .gir graph of n relus in a row.
func reluChain(n int) *ir.Graph {
	var sb strings.Builder
	sb.WriteString("graph chain {\n  input %x : f32[64]\n")
	prev := "x"
	for i := range n {
		fmt.Fprintf(&sb, "  %%%d = relu(%%%s) : f32[64]\n", i, prev)
		prev = fmt.Sprint(i)
	}
	fmt.Fprintf(&sb, "  output y = %%%s\n}\n", prev)
	g, err := ir.Parse("chain.gir", []byte(sb.String()))
	if err != nil {
		panic(err)
	}
	return g
}

// BenchmarkReluChain times the pipeline on chains of 2k to 16k relus: per relu the time should
// stay flat (linear in the chain).
//
//	go test ./passes -run '^$' -bench ReluChain -benchtime 3x
func BenchmarkReluChain(b *testing.B) {
	for _, n := range []int{2048, 4096, 8192, 16384} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			g := reluChain(n)
			for b.Loop() {
				if _, err := passes.Run(g, passes.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
