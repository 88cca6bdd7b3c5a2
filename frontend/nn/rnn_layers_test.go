package nn

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// Run one layer at a time without dropout, the layers compute bit for bit what the stacked
// layers compute, states included.
func TestLayerByLayer(t *testing.T) {
	for _, kind := range []string{"rnn", "lstm", "gru"} {
		var joint, split *ir.Graph
		for _, byLayer := range []bool{false, true} {
			g, err := frontend.Build(kind, func(b *frontend.Builder) {
				x := b.Input("x", ir.F32, 4, 2, 3)
				h0 := b.Input("h0", ir.F32, 3, 2, 5)
				c0 := b.Input("c0", ir.F32, 3, 2, 5)
				o := RNNOptions{NumLayers: 3}
				var out []*frontend.Tensor
				switch kind {
				case "rnn", "gru":
					var r *Recurrent
					var run func(x *frontend.Tensor, l []frontend.RNNWeights, st []*frontend.Tensor) (*frontend.Tensor, []*frontend.Tensor)
					if kind == "rnn" {
						m := NewRNN(b, kind, 3, 5, o)
						r = &m.Recurrent
						run = func(x *frontend.Tensor, l []frontend.RNNWeights, st []*frontend.Tensor) (*frontend.Tensor, []*frontend.Tensor) {
							y, h := frontend.RNN(x, st[0], l, false, false)
							return y, []*frontend.Tensor{h}
						}
					} else {
						m := NewGRU(b, kind, 3, 5, o)
						r = &m.Recurrent
						run = func(x *frontend.Tensor, l []frontend.RNNWeights, st []*frontend.Tensor) (*frontend.Tensor, []*frontend.Tensor) {
							y, h := frontend.GRU(x, st[0], l, false)
							return y, []*frontend.Tensor{h}
						}
					}
					if byLayer {
						y, st := r.layerByLayer(x, []*frontend.Tensor{h0}, run)
						out = append([]*frontend.Tensor{y}, st...)
					} else {
						y, st := run(x, r.Layers, []*frontend.Tensor{h0})
						out = append([]*frontend.Tensor{y}, st...)
					}
				case "lstm":
					m := NewLSTM(b, kind, 3, 5, o)
					run := func(x *frontend.Tensor, l []frontend.RNNWeights, st []*frontend.Tensor) (*frontend.Tensor, []*frontend.Tensor) {
						y, h, c := frontend.LSTM(x, st[0], st[1], l, false)
						return y, []*frontend.Tensor{h, c}
					}
					if byLayer {
						y, st := m.layerByLayer(x, []*frontend.Tensor{h0, c0}, run)
						out = append([]*frontend.Tensor{y}, st...)
					} else {
						y, st := run(x, m.Layers, []*frontend.Tensor{h0, c0})
						out = append([]*frontend.Tensor{y}, st...)
					}
				}
				for i, o := range out {
					b.Output(fmt.Sprint("y", i), o)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if byLayer {
				split = g
			} else {
				joint = g
			}
		}
		in, params, err := tensor.SeededValues(joint, 0)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(joint, in, params)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ref.Run(split, in, params)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d outputs, want %d", kind, len(got), len(want))
		}
		for name, w := range want {
			if fmt.Sprint(got[name].Type, got[name].F) != fmt.Sprint(w.Type, w.F) {
				t.Errorf("%s: %s layer by layer %v, stacked %v", kind, name, got[name].F, w.F)
			}
		}
	}
}
