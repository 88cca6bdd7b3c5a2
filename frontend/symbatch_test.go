package frontend_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// The helpers sequence models use take a symbolic batch where it flows from their operands: a
// mask without the batch spreads over it in Where and MaskedFill, and a recurrent network's
// initial state carries the input's batch (or is zeros over it). A tensor built at the bound's
// batch is refused at its line.
func TestSymbolicBatchHelpers(t *testing.T) {
	const hidden, in = 5, 3
	lstm := func(batchFirst, state bool, stateBatch func(b *frontend.Builder) int) func(b *frontend.Builder) {
		return func(b *frontend.Builder) {
			dims := []int{b.Batch(4), 6, in}
			if !batchFirst {
				dims[0], dims[1] = 6, dims[0]
			}
			x := b.Input("x", ir.F32, dims...)
			w := []frontend.RNNWeights{{
				WeightIH: b.Param("wih", ir.T(ir.F32, 4*hidden, in), frontend.Zeros()),
				WeightHH: b.Param("whh", ir.T(ir.F32, 4*hidden, hidden), frontend.Zeros()),
			}}
			var h0, c0 *frontend.Tensor
			if state {
				h0 = b.Input("h0", ir.F32, 1, stateBatch(b), hidden)
				c0 = b.Input("c0", ir.F32, 1, stateBatch(b), hidden)
			}
			out, hn, cn := frontend.LSTM(x, h0, c0, w, batchFirst)
			b.Output("out", out)
			b.Output("h_n", hn)
			b.Output("c_n", cn)
		}
	}
	batch := func(b *frontend.Builder) int { return b.Batch(4) }
	bound := func(*frontend.Builder) int { return 4 }
	causal := func(maskBatch bool) func(b *frontend.Builder) {
		return func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, b.Batch(4), 2, 3, 3)
			mask := b.Iota(ir.I32, 1, 3, 3).Gt(b.Iota(ir.I32, 0, 3, 3)) // [T, T]
			if maskBatch {
				mask = b.Iota(ir.I32, 3, 4, 2, 3, 3).Gt(b.Iota(ir.I32, 2, 4, 2, 3, 3)) // at the bound
			}
			b.Output("y", x.MaskedFill(mask, math.Inf(-1)))
			b.Output("w", frontend.Where(mask, x, b.Full(0, ir.F32)))
		}
	}
	for _, tc := range []struct {
		name  string
		model func(b *frontend.Builder)
		want  string // the outputs' types, or the error
	}{
		{"lstm state over the batch", lstm(true, true, batch), "out f32[batch,6,5], h_n f32[1,batch,5], c_n f32[1,batch,5]"},
		{"lstm time-major", lstm(false, true, batch), "out f32[6,batch,5], h_n f32[1,batch,5], c_n f32[1,batch,5]"},
		{"lstm zero state", lstm(true, false, nil), "out f32[batch,6,5], h_n f32[1,batch,5], c_n f32[1,batch,5]"},
		{"lstm state at the bound", lstm(true, true, bound), "symbatch_test.go:34: lstm: h0 f32[1,4,5] has the wrong shape, want f32[1,batch,5]"},
		{"causal mask", causal(false), "y f32[batch,2,3,3], w f32[batch,2,3,3]"},
		{"mask at the bound", causal(true), "symbatch_test.go:49: where: shapes cannot be broadcast together: cond is bool[4,2,3,3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := frontend.Build("m", tc.model, frontend.WithMaxBatch(4))
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				var outs []string
				for _, o := range g.Outputs {
					outs = append(outs, o.Name+" "+o.Value.Type.String())
				}
				got = strings.Join(outs, ", ")
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
