package nn

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// recurrentNet builds a 3-layer RNN, LSTM or GRU with dropout p over x [T, B, I] = [4, 2, 3]
// from given initial states, with every output of Forward an output of the graph.
func recurrentNet(kind string, p float64, opts ...frontend.Option) (*ir.Graph, error) {
	return frontend.Build(kind, func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 4, 2, 3)
		h0 := b.Input("h0", ir.F32, 3, 2, 5)
		o := RNNOptions{NumLayers: 3, Dropout: p}
		switch kind {
		case "rnn":
			out, hn := NewRNN(b, "rnn", 3, 5, o).Forward(x, h0)
			b.Output("out", out)
			b.Output("hn", hn)
		case "lstm":
			out, hn, cn := NewLSTM(b, "lstm", 3, 5, o).Forward(x, h0, b.Input("c0", ir.F32, 3, 2, 5))
			b.Output("out", out)
			b.Output("hn", hn)
			b.Output("cn", cn)
		case "gru":
			out, hn := NewGRU(b, "gru", 3, 5, o).Forward(x, h0)
			b.Output("out", out)
			b.Output("hn", hn)
		}
	}, opts...)
}

func randomMasks(g *ir.Graph) int {
	n := 0
	for _, v := range g.Values {
		if v.Op == "philox_uniform" {
			n++
		}
	}
	return n
}

// The recurrent layers' dropout builds the inference graph of dropout 0 in eval mode; in
// training mode it drops the output of every layer but the last (two masks for three layers),
// and the layers, run one at a time there, compute what the stacked net computes.
func TestRecurrentDropout(t *testing.T) {
	for _, kind := range []string{"rnn", "lstm", "gru"} {
		eval0, err := recurrentNet(kind, 0)
		if err != nil {
			t.Fatal(err)
		}
		eval, err := recurrentNet(kind, 0.3)
		if err != nil {
			t.Fatal(err)
		}
		if eval.String() != eval0.String() {
			t.Errorf("%s: eval graph with dropout 0.3 differs from dropout 0's", kind)
		}
		train, err := recurrentNet(kind, 0.3, frontend.WithTraining())
		if err != nil {
			t.Fatal(err)
		}
		if n := randomMasks(train); n != 2 {
			t.Errorf("%s: training graph draws %d masks, want 2", kind, n)
		}
		in, params, err := tensor.SeededValues(train, 0)
		if err != nil {
			t.Fatal(err)
		}
		run := func(g *ir.Graph, key int64) map[string]*tensor.Tensor {
			t.Helper()
			vals := map[string]*tensor.Tensor{}
			for _, v := range g.Inputs() {
				vals[v.Name] = in[v.Name]
			}
			if k := vals[frontend.RandomKeyName]; k != nil {
				k.I[0] = key
			}
			out, err := ref.Run(g, vals, params)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		a, b, e := run(train, 1), run(train, 2), run(eval, 0)
		if fmt.Sprint(a["out"].F) == fmt.Sprint(b["out"].F) || fmt.Sprint(a["out"].F) == fmt.Sprint(e["out"].F) {
			t.Errorf("%s: the training output does not move with the key or equals eval's", kind)
		}
		// The first layer sees no dropout: its final state is eval's.
		if fmt.Sprint(a["hn"].F[:10]) != fmt.Sprint(e["hn"].F[:10]) {
			t.Errorf("%s: layer 0's final state %v, eval %v", kind, a["hn"].F[:10], e["hn"].F[:10])
		}
	}
}

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
