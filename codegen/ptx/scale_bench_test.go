package ptx

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// chainKernel is one loop kernel computing n relus in a row over f32[64].
func chainKernel(n int) Kernel {
	g := ir.NewGraph("chain")
	t := ir.Type{DType: ir.F32, Shape: ir.Shape{64}}
	v := g.Input("x", t, nil)
	for range n {
		v = g.Add("relu", t, nil, v)
	}
	g.SetOutput("y", v)
	return Kernel{Name: "k0_relu", Graph: g}
}

// BenchmarkReluChain times code generation for one kernel of 1k to 8k chained relus: per relu
// the time should stay flat (linear in the chain).
//
//	go test ./codegen/ptx -run '^$' -bench ReluChain -benchtime 3x
func BenchmarkReluChain(b *testing.B) {
	for _, n := range []int{1024, 2048, 4096, 8192} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			k := chainKernel(n)
			for b.Loop() {
				if _, _, err := Generate(k, Target{SM: 80}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
