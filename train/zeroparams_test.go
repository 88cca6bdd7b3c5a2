package train

import (
	"testing"

	"github.com/gcomp/gcomp/internal/paramcheck"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// seededNonZero is tensor.SeededValues for a step's differential tests, with the params the
// models initialize to zeros (LayerNorm's and batch norm's biases and running means, the
// attention's projection biases) drawn nonzero instead, so a step that drops or misplaces one
// fails; paramcheck refuses any that are still all zeros. It changes g's init attributes only.
func seededNonZero(t *testing.T, g *ir.Graph, seed uint64) (inputs, params map[string]*tensor.Tensor) {
	t.Helper()
	paramcheck.Randomize(g, 0.1)
	inputs, params, err := tensor.SeededValues(g, seed)
	if err != nil {
		t.Fatal(err)
	}
	paramcheck.NonZero(t, params)
	return inputs, params
}
