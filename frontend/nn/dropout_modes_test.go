package nn_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// encoderLayer builds one post-norm encoder layer (or a norm-first causal one) with dropout p;
// every call builds at the same lines, so graphs compare as text.
func encoderLayer(p float64, normFirst bool, opts ...frontend.Option) (*ir.Graph, error) {
	return frontend.Build("layer", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 2, 5, 8)
		l := nn.NewTransformerEncoderLayer(b, "layer", 8, 2, tel{DimFeedforward: 16, Dropout: p, BatchFirst: true, NormFirst: normFirst})
		if normFirst {
			b.Output("y", l.ForwardCausal(x))
		} else {
			b.Output("y", l.Forward(x))
		}
	}, opts...)
}

// TransformerEncoderLayer's dropout (PyTorch's default 0.1) builds the same inference graph as
// dropout 0, and in training mode drops in four places: the attention weights, dropout1, the
// feed-forward's hidden activations and dropout2, as PyTorch does.
func TestTransformerDropout(t *testing.T) {
	for _, normFirst := range []bool{false, true} {
		eval0, err := encoderLayer(0, normFirst)
		if err != nil {
			t.Fatal(err)
		}
		eval, err := encoderLayer(0.1, normFirst)
		if err != nil {
			t.Fatal(err)
		}
		if eval.String() != eval0.String() {
			t.Errorf("normFirst %v: eval graph with dropout 0.1 differs from dropout 0's:\n%s", normFirst, eval)
		}
		train0, err := encoderLayer(0, normFirst, frontend.WithTraining())
		if err != nil {
			t.Fatal(err)
		}
		train, err := encoderLayer(0.1, normFirst, frontend.WithTraining())
		if err != nil {
			t.Fatal(err)
		}
		if n := randomMasks(train0); n != 0 || train0.Lookup(frontend.RandomKeyName) != nil {
			t.Errorf("normFirst %v: training graph with dropout 0 draws %d masks", normFirst, n)
		}
		if n := randomMasks(train); n != 4 {
			t.Errorf("normFirst %v: training graph with dropout 0.1 draws %d masks, want 4", normFirst, n)
		}
		// The masks drop: the output moves with the key, and differs from eval's.
		in, params, err := tensor.SeededValues(train, 0)
		if err != nil {
			t.Fatal(err)
		}
		run := func(g *ir.Graph, key int64) *tensor.Tensor { return runWithKey(t, g, in, params, key)["y"] }
		a, b, e := run(train, 1), run(train, 2), run(eval, 0)
		if same(a, b) || same(a, e) || !same(run(train, 1), a) {
			t.Errorf("normFirst %v: training outputs for keys 1 and 2 and eval's: same %v, %v; key 1 twice the same %v",
				normFirst, same(a, b), same(a, e), same(run(train, 1), a))
		}
		if testing.Short() {
			continue
		}
		// The simulator runs the compiled training-mode forward with the same masks.
		res, err := compiler.Compile(train, compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in[frontend.RandomKeyName].I[0] = 1
		sim, err := simProgram(t, res.Artifact, params).Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if r := check.CompareIn("y", sim.Outputs["y"], a, ir.F32, false); !r.Pass() {
			t.Errorf("normFirst %v: simulator against the reference interpreter: %d elements outside tolerance; first %s", normFirst, r.Bad, r.First)
		}
	}
}

func same(a, b *tensor.Tensor) bool {
	for i := range a.F {
		if a.F[i] != b.F[i] {
			return false
		}
	}
	return true
}

// A dropout probability outside [0, 1] is refused in PyTorch's words.
func TestTransformerDropoutRange(t *testing.T) {
	for _, p := range []float64{-0.1, 1.5, math.NaN()} {
		_, err := encoderLayer(p, false)
		if want := fmt.Sprint("dropout probability has to be between 0 and 1, but got ", p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("dropout %v: error %v, want %q", p, err, want)
		}
		_, err = frontend.Build("mha", func(b *frontend.Builder) {
			nn.NewMultiheadAttention(b, "a", 8, 2, nn.MultiheadAttentionOptions{Dropout: p})
		})
		if err == nil || !strings.Contains(err.Error(), "dropout probability has to be between 0 and 1") {
			t.Errorf("multihead attention dropout %v: error %v", p, err)
		}
	}
}

// randomMasks counts the random draws of g.
func randomMasks(g *ir.Graph) int {
	n := 0
	for _, v := range g.Values {
		if v.Op == "philox_uniform" {
			n++
		}
	}
	return n
}

// runWithKey runs g on the reference interpreter on the values of in that g declares as inputs,
// its random key (if any) set to key.
func runWithKey(t *testing.T, g *ir.Graph, in, params map[string]*tensor.Tensor, key int64) map[string]*tensor.Tensor {
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

// recurrentNet builds a 3-layer RNN, LSTM or GRU with dropout p over x [T, B, I] = [4, 2, 3]
// from given initial states, with every output of Forward an output of the graph.
func recurrentNet(kind string, p float64, opts ...frontend.Option) (*ir.Graph, error) {
	return frontend.Build(kind, func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 4, 2, 3)
		h0 := b.Input("h0", ir.F32, 3, 2, 5)
		o := nn.RNNOptions{NumLayers: 3, Dropout: p}
		switch kind {
		case "rnn":
			out, hn := nn.NewRNN(b, "rnn", 3, 5, o).Forward(x, h0)
			b.Output("out", out)
			b.Output("hn", hn)
		case "lstm":
			out, hn, cn := nn.NewLSTM(b, "lstm", 3, 5, o).Forward(x, h0, b.Input("c0", ir.F32, 3, 2, 5))
			b.Output("out", out)
			b.Output("hn", hn)
			b.Output("cn", cn)
		case "gru":
			out, hn := nn.NewGRU(b, "gru", 3, 5, o).Forward(x, h0)
			b.Output("out", out)
			b.Output("hn", hn)
		}
	}, opts...)
}

// The recurrent layers' dropout builds the inference graph of dropout 0 in eval mode; in
// training mode it drops the output of every layer but the last (two masks for three layers),
// the first layer's state untouched. (TestLayerByLayer checks that layers run one at a time
// compute what the stacked net computes.)
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
		run := func(g *ir.Graph, key int64) map[string]*tensor.Tensor { return runWithKey(t, g, in, params, key) }
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
