package compiler_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/passes"
)

// fusionDiffers are the examples whose build over a symbolic batch fuses differently from the
// static build at the bound, each with why. An example that fuses the same is taken off the
// list, or the test fails.
// (gpt2 and llama were, until the norm-prologue GEMV ran at symbolic sizes.)
var fusionDiffers = map[string]string{}

// Fusion decides on the bound's shapes (issue 27: "fusion, autodiff and autocast unchanged in
// what they decide"), so every example built over a symbolic batch in [1, maxBatch] has the
// kernels, kinds and spaces of its static build at maxBatch, in order, but for those listed in
// fusionDiffers.
func TestExamplesFuseAsStatic(t *testing.T) {
	for _, ex := range examples.All() {
		t.Run(ex.Name, func(t *testing.T) {
			var kernels [2][]string
			for i, opt := range []frontend.Option{frontend.WithBatch(maxBatch), frontend.WithMaxBatch(maxBatch)} {
				g, err := frontend.Build(ex.Name, ex.Model, opt)
				if err != nil {
					t.Fatal(err)
				}
				res, err := passes.Run(g, passes.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range res.Kernels.Kernels {
					kernels[i] = append(kernels[i], fmt.Sprintf("%s %v %v", k.Name, k.Kind, k.Space))
				}
			}
			why, listed := fusionDiffers[ex.Name]
			switch same := slices.Equal(kernels[0], kernels[1]); {
			case same && listed:
				t.Errorf("fuses as its static build now: take it off fusionDiffers (%s)", why)
			case !same && !listed:
				t.Errorf("over a symbolic batch the kernels are\n%v\nstatic at the bound\n%v", kernels[1], kernels[0])
			}
		})
	}
}
