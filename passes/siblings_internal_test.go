package passes

import (
	"testing"

	"github.com/gcomp/gcomp/examples/llama"
	"github.com/gcomp/gcomp/frontend"
)

// TestSiblingTestsGrowAsPairs: the sibling pass tests each pair of groups structurally once,
// however many merges restart its search. The groups of every layer read the same buffers (the
// position, the rotary tables), so the pairs grow as the square of the layers: twice the layers
// of a language model's decode step ask at most about four times the questions. When every
// restart tested every pair again (the restarts grow with the layers too) they asked 5.9 times
// as many from 8 layers to 16.
func TestSiblingTestsGrowAsPairs(t *testing.T) {
	tests := map[int]int{}
	for _, layers := range []int{8, 16} {
		c := llama.Config{Vocab: 64, Hidden: 64, Intermediate: 128, Layers: layers, Heads: 4, KVHeads: 2, MaxSeq: 32, NormEps: 1e-5, RopeTheta: 10000}
		g, err := frontend.Build("llama", func(b *frontend.Builder) { llama.Decode(b, c, 1) })
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(g, Options{})
		if err != nil {
			t.Fatal(err)
		}
		f := newFuser(res.Graph, Options{}.Fusion, false)
		f.group()
		if f.siblingTests == 0 {
			t.Fatalf("%d layers: the sibling pass tested no pair", layers)
		}
		tests[layers] = f.siblingTests
	}
	if 2*tests[16] > 9*tests[8] {
		t.Errorf("sibling tests: %d for 8 layers, %d for 16 (want at most 4.5×)", tests[8], tests[16])
	}
	t.Logf("sibling tests: %v", tests)
}
