package examples_test

import (
	"testing"

	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// The sequence models built once over a symbolic batch (`--max-batch 4`) mean at each batch what
// their static build at that batch means: the reference interpreter gives the same outputs, bit
// for bit, for the same inputs and weights. The initial state (lstm), the causal mask (gpt) and
// the positions (gpt2, llama) broadcast over the batch rather than being built at its bound.
func TestSymbolicBatchReference(t *testing.T) {
	models := map[string]func(*frontend.Builder){}
	for _, ex := range examples.All() {
		models[ex.Name] = ex.Model
	}
	for _, name := range []string{"lstm", "gpt", "gpt2", "llama"} {
		t.Run(name, func(t *testing.T) {
			g, err := frontend.Build(name, models[name], frontend.WithMaxBatch(4))
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Dims) != 1 || g.Dims[0].Name != frontend.BatchDim {
				t.Fatalf("dims %v, want the batch", g.Dims)
			}
			for _, n := range []int{1, 3, 4} {
				at, err := ops.Instantiate(g, map[string]int64{frontend.BatchDim: int64(n)})
				if err != nil {
					t.Fatal(err)
				}
				static, err := frontend.Build(name, models[name], frontend.WithBatch(n))
				if err != nil {
					t.Fatal(err)
				}
				inputs, params, err := tensor.SeededValues(static, uint64(n))
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.Run(static, inputs, params)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ref.Run(at, inputs, params)
				if err != nil {
					t.Fatalf("batch %d: %v", n, err)
				}
				for k, w := range want {
					if got[k] == nil || !got[k].Type.Equal(w.Type) || string(got[k].Bytes()) != string(w.Bytes()) {
						t.Errorf("batch %d: output %s differs from the static build's", n, k)
					}
				}
			}
		})
	}
}
