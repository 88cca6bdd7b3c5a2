package nn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/internal/reftest"
	"github.com/gcomp/gcomp/frontend/nn"
)

const f32 = frontend.F32

type tel = nn.TransformerEncoderLayerOptions

// Each module's parameters, in order, are the keys and shapes of the PyTorch module's
// state_dict, written here from PyTorch's documentation; the forward result has the documented
// shape.
func TestStateDict(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     func(b *frontend.Builder) *frontend.Tensor
		keys  string // "key shape" pairs of the state_dict, in order
		shape string // result type
	}{
		{"Linear(3, 4)", func(b *frontend.Builder) *frontend.Tensor {
			return nn.NewLinear(b, "fc", 3, 4).Forward(b.Input("x", f32, 2, 3))
		}, "fc.weight [4,3] fc.bias [4]", "f32[2,4]"},
		{"Linear(3, 4, bias=False)", func(b *frontend.Builder) *frontend.Tensor {
			return nn.NewLinear(b, "fc", 3, 4, nn.LinearOptions{NoBias: true}).Forward(b.Input("x", f32, 5, 2, 3))
		}, "fc.weight [4,3]", "f32[5,2,4]"},
		{"Conv2d(3, 16, 3, padding=1)", func(b *frontend.Builder) *frontend.Tensor {
			return nn.NewConv2d(b, "conv1", 3, 16, 3, nn.Conv2dOptions{Padding: 1}).Forward(b.Input("x", f32, 2, 3, 8, 8))
		}, "conv1.weight [16,3,3,3] conv1.bias [16]", "f32[2,16,8,8]"},
		{"Conv2d(4, 8, 3, stride=2, groups=2, bias=False)", func(b *frontend.Builder) *frontend.Tensor {
			m := nn.NewConv2d(b, "c", 4, 8, 3, nn.Conv2dOptions{Stride: 2, Groups: 2, NoBias: true})
			return m.Forward(b.Input("x", f32, 1, 4, 9, 9))
		}, "c.weight [8,2,3,3]", "f32[1,8,4,4]"},
		{"Conv2d dilation", func(b *frontend.Builder) *frontend.Tensor {
			return nn.NewConv2d(b, "c", 1, 2, 3, nn.Conv2dOptions{Dilation: 2}).Forward(b.Input("x", f32, 1, 1, 9, 9))
		}, "c.weight [2,1,3,3] c.bias [2]", "f32[1,2,5,5]"},
		{"MaxPool2d(2, 2)", func(b *frontend.Builder) *frontend.Tensor {
			return nn.MaxPool2d{KernelSize: 2, Stride: 2}.Forward(b.Input("x", f32, 1, 3, 28, 28))
		}, "", "f32[1,3,14,14]"},
		{"AvgPool2d(3, 1, 1)", func(b *frontend.Builder) *frontend.Tensor {
			return nn.AvgPool2d{KernelSize: 3, Stride: 1, Padding: 1}.Forward(b.Input("x", f32, 1, 3, 7, 7))
		}, "", "f32[1,3,7,7]"},
		{"activations", func(b *frontend.Builder) *frontend.Tensor {
			mods := []nn.Module{nn.ReLU{}, nn.GELU{}, nn.GELU{Approximate: "tanh"}, nn.SiLU{}, nn.Sigmoid{}, nn.Tanh{},
				nn.Softmax{Dim: -1}, nn.LogSoftmax{Dim: 1}, nn.Flatten{}}
			return nn.NewSequential(mods...).Forward(b.Input("x", f32, 2, 3, 4))
		}, "", "f32[2,12]"},
		{"Sequential(Linear(3, 4), ReLU(), Linear(4, 2))", func(b *frontend.Builder) *frontend.Tensor {
			s := b.Sub("net")
			net := nn.NewSequential(nn.NewLinear(s, "0", 3, 4), nn.ReLU{}, nn.NewLinear(s, "2", 4, 2))
			return net.Forward(b.Input("x", f32, 5, 3))
		}, "net.0.weight [4,3] net.0.bias [4] net.2.weight [2,4] net.2.bias [2]", "f32[5,2]"},
		{"Embedding(10, 4)", func(b *frontend.Builder) *frontend.Tensor {
			return nn.NewEmbedding(b, "emb", 10, 4).Forward(b.Input("ids", frontend.I64, 2, 7).WithRange(0, 10))
		}, "emb.weight [10,4]", "f32[2,7,4]"},
		{"LayerNorm(8)", func(b *frontend.Builder) *frontend.Tensor {
			return nn.NewLayerNorm(b, "ln", 8).Forward(b.Input("x", f32, 2, 3, 8))
		}, "ln.weight [8] ln.bias [8]", "f32[2,3,8]"},
		{"LayerNorm(8, elementwise_affine=False)", func(b *frontend.Builder) *frontend.Tensor {
			return nn.NewLayerNorm(b, "ln", 8, nn.LayerNormOptions{NoAffine: true}).Forward(b.Input("x", f32, 8))
		}, "", "f32[8]"},
		{"MultiheadAttention(16, 4)", func(b *frontend.Builder) *frontend.Tensor {
			x := b.Input("x", f32, 5, 2, 16) // [L, B, E]
			return nn.NewMultiheadAttention(b, "attn", 16, 4).Forward(x, x, x, false)
		}, "attn.in_proj_weight [48,16] attn.in_proj_bias [48] attn.out_proj.weight [16,16] attn.out_proj.bias [16]", "f32[5,2,16]"},
		{"MultiheadAttention cross, batch_first", func(b *frontend.Builder) *frontend.Tensor {
			q, kv := b.Input("q", f32, 2, 5, 16), b.Input("kv", f32, 2, 7, 16)
			return nn.NewMultiheadAttention(b, "attn", 16, 2, nn.MultiheadAttentionOptions{BatchFirst: true}).Forward(q, kv, kv, false)
		}, "attn.in_proj_weight [48,16] attn.in_proj_bias [48] attn.out_proj.weight [16,16] attn.out_proj.bias [16]", "f32[2,5,16]"},
		{"MultiheadAttention unbatched, bias=False", func(b *frontend.Builder) *frontend.Tensor {
			x := b.Input("x", f32, 5, 16)
			return nn.NewMultiheadAttention(b, "attn", 16, 4, nn.MultiheadAttentionOptions{NoBias: true}).Forward(x, x, x, true)
		}, "attn.in_proj_weight [48,16] attn.out_proj.weight [16,16]", "f32[5,16]"},
		{"TransformerEncoderLayer(16, 4, 32)", func(b *frontend.Builder) *frontend.Tensor {
			m := nn.NewTransformerEncoderLayer(b, "layer", 16, 4, nn.TransformerEncoderLayerOptions{DimFeedforward: 32})
			return m.Forward(b.Input("src", f32, 5, 2, 16))
		}, "layer.self_attn.in_proj_weight [48,16] layer.self_attn.in_proj_bias [48] layer.self_attn.out_proj.weight [16,16] " +
			"layer.self_attn.out_proj.bias [16] layer.linear1.weight [32,16] layer.linear1.bias [32] layer.linear2.weight [16,32] " +
			"layer.linear2.bias [16] layer.norm1.weight [16] layer.norm1.bias [16] layer.norm2.weight [16] layer.norm2.bias [16]", "f32[5,2,16]"},
		{"TransformerEncoderLayer default feedforward, norm_first, gelu, causal", func(b *frontend.Builder) *frontend.Tensor {
			m := nn.NewTransformerEncoderLayer(b, "", 8, 2, nn.TransformerEncoderLayerOptions{NormFirst: true, Activation: "gelu", BatchFirst: true})
			return m.ForwardCausal(b.Input("src", f32, 2, 5, 8))
		}, "self_attn.in_proj_weight [24,8] self_attn.in_proj_bias [24] self_attn.out_proj.weight [8,8] self_attn.out_proj.bias [8] " +
			"linear1.weight [2048,8] linear1.bias [2048] linear2.weight [8,2048] linear2.bias [8] " +
			"norm1.weight [8] norm1.bias [8] norm2.weight [8] norm2.bias [8]", "f32[2,5,8]"},
		{"RNNCell(3, 4)", func(b *frontend.Builder) *frontend.Tensor {
			return nn.NewRNNCell(b, "cell", 3, 4).Forward(b.Input("x", f32, 2, 3), nil)
		}, "cell.weight_ih [4,3] cell.weight_hh [4,4] cell.bias_ih [4] cell.bias_hh [4]", "f32[2,4]"},
		{"LSTMCell(3, 4)", func(b *frontend.Builder) *frontend.Tensor {
			h, _ := nn.NewLSTMCell(b, "cell", 3, 4).Forward(b.Input("x", f32, 2, 3), nil, nil)
			return h
		}, "cell.weight_ih [16,3] cell.weight_hh [16,4] cell.bias_ih [16] cell.bias_hh [16]", "f32[2,4]"},
		{"GRUCell(3, 4, bias=False)", func(b *frontend.Builder) *frontend.Tensor {
			return nn.NewGRUCell(b, "cell", 3, 4, nn.CellOptions{NoBias: true}).Forward(b.Input("x", f32, 2, 3), b.Input("h", f32, 2, 4))
		}, "cell.weight_ih [12,3] cell.weight_hh [12,4]", "f32[2,4]"},
		{"RNN(3, 4, num_layers=2, nonlinearity=relu)", func(b *frontend.Builder) *frontend.Tensor {
			out, _ := nn.NewRNN(b, "rnn", 3, 4, nn.RNNOptions{NumLayers: 2, Nonlinearity: "relu"}).Forward(b.Input("x", f32, 6, 2, 3), nil)
			return out
		}, "rnn.weight_ih_l0 [4,3] rnn.weight_hh_l0 [4,4] rnn.bias_ih_l0 [4] rnn.bias_hh_l0 [4] " +
			"rnn.weight_ih_l1 [4,4] rnn.weight_hh_l1 [4,4] rnn.bias_ih_l1 [4] rnn.bias_hh_l1 [4]", "f32[6,2,4]"},
		{"LSTM(3, 4, num_layers=2, batch_first=True) c_n", func(b *frontend.Builder) *frontend.Tensor {
			_, _, cn := nn.NewLSTM(b, "lstm", 3, 4, nn.RNNOptions{NumLayers: 2, BatchFirst: true}).Forward(b.Input("x", f32, 2, 6, 3), nil, nil)
			return cn
		}, "lstm.weight_ih_l0 [16,3] lstm.weight_hh_l0 [16,4] lstm.bias_ih_l0 [16] lstm.bias_hh_l0 [16] " +
			"lstm.weight_ih_l1 [16,4] lstm.weight_hh_l1 [16,4] lstm.bias_ih_l1 [16] lstm.bias_hh_l1 [16]", "f32[2,2,4]"},
		{"GRU(3, 4) unbatched", func(b *frontend.Builder) *frontend.Tensor {
			out, _ := nn.NewGRU(b, "gru", 3, 4).Forward(b.Input("x", f32, 6, 3), nil)
			return out
		}, "gru.weight_ih_l0 [12,3] gru.weight_hh_l0 [12,4] gru.bias_ih_l0 [12] gru.bias_hh_l0 [12]", "f32[6,4]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := frontend.Build("m", func(b *frontend.Builder) { b.Output("y", tc.f(b)) })
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, p := range g.Params() {
				keys = append(keys, p.Name+" "+p.Type.Shape.String())
			}
			if got := strings.Join(keys, " "); got != tc.keys {
				t.Errorf("parameters\n got %s\nwant %s", got, tc.keys)
			}
			if got := g.Outputs[0].Value.Type.String(); got != tc.shape {
				t.Errorf("result %s, want %s", got, tc.shape)
			}
		})
	}
}

// The parameters carry PyTorch's default initializers.
func TestInitializers(t *testing.T) {
	g, err := frontend.Build("m", func(b *frontend.Builder) {
		x := b.Input("x", f32, 2, 5, 16)
		y := nn.NewTransformerEncoderLayer(b, "t", 16, 4, nn.TransformerEncoderLayerOptions{DimFeedforward: 64}).Forward(x)
		_, hn := nn.NewGRU(b, "gru", 16, 25).Forward(y, nil)
		b.Output("hn", hn)
		b.Output("conv", nn.NewConv2d(b, "conv", 2, 3, 5).Forward(b.Input("img", f32, 1, 2, 5, 5)))
		b.Output("emb", nn.NewEmbedding(b, "emb", 4, 3).Forward(b.Input("i", frontend.I32, 2)))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"t.self_attn.in_proj_weight":  `{high=0.30618621784789724, init="uniform", low=-0.30618621784789724}`, // xavier: √(6/(16+48))
		"t.self_attn.in_proj_bias":    `{init="zeros"}`,
		"t.self_attn.out_proj.weight": `{high=0.25, init="uniform", low=-0.25}`, // 1/√16
		"t.self_attn.out_proj.bias":   `{init="zeros"}`,
		"t.linear1.weight":            `{high=0.25, init="uniform", low=-0.25}`,
		"t.linear2.bias":              `{high=0.125, init="uniform", low=-0.125}`, // 1/√64
		"t.norm1.weight":              `{init="ones"}`,
		"t.norm2.bias":                `{init="zeros"}`,
		"gru.weight_ih_l0":            `{high=0.2, init="uniform", low=-0.2}`, // 1/√hidden
		"gru.bias_hh_l0":              `{high=0.2, init="uniform", low=-0.2}`,
		"conv.weight":                 `{high=0.1414213562373095, init="uniform", low=-0.1414213562373095}`, // 1/√(2·5·5)
		"conv.bias":                   `{high=0.1414213562373095, init="uniform", low=-0.1414213562373095}`,
		"emb.weight":                  `{init="normal", mean=0.0, std=1.0}`,
	}
	for name, attrs := range want {
		v := g.Lookup(name)
		if v == nil {
			t.Errorf("no parameter %s", name)
			continue
		}
		if got := g.Format(v); !strings.Contains(got, attrs) {
			t.Errorf("%s: %s, want attributes %s", name, got, attrs)
		}
	}
}

// Mistakes made with modules are reported at the user's line, not inside package nn.
func TestModuleErrors(t *testing.T) {
	type B = frontend.Builder
	x := func(b *B) *frontend.Tensor { return b.Input("x", f32, 64, 784) }
	for _, tc := range []struct {
		f    func(b *frontend.Builder)
		want string
	}{
		{func(b *B) { nn.NewLinear(b, "fc", 128, 10).Forward(x(b)) }, "linear: input features differ: x is f32[64,784], fc.weight is f32[10,128]"},
		{func(b *B) { nn.NewLinear(b, "fc", 1, 1); nn.NewLinear(b, "fc", 1, 1) }, `duplicate name "fc.weight": already declared as parameter at nn_test.go:`},
		{func(b *B) { nn.NewConv2d(b, "c", 3, 8, 3).Forward(b.Input("x", f32, 1, 4, 8, 8)) }, "conv2d: input channels differ"},
		{func(b *B) { nn.NewConv2d(b, "c", 3, 8, 3, nn.Conv2dOptions{Groups: 2}) }, "conv2d c: groups 2 must divide"},
		{func(b *B) { nn.NewMultiheadAttention(b, "a", 10, 3) }, "multihead attention a: embed_dim 10 must be divisible by num_heads 3"},
		{func(b *B) { nn.NewLSTM(b, "l", 3, 4, nn.RNNOptions{Dropout: 1.5}) }, "dropout probability has to be between 0 and 1, but got 1.5"},
		{func(b *B) { nn.NewLSTM(b, "l", 3, 4, nn.RNNOptions{Nonlinearity: "relu"}) }, "lstm: nonlinearity is an option of RNN only"},
		{func(b *B) { nn.NewRNN(b, "l", 3, 4, nn.RNNOptions{Nonlinearity: "gelu"}) }, `rnn: nonlinearity must be "tanh" or "relu", have "gelu"`},
		{func(b *B) { nn.NewLSTM(b, "l", 3, 4).Forward(b.Input("x", f32, 5, 2, 7), nil, nil) }, "lstm: want an input [T, B, I] or [T, I] with I = 3, x is f32[5,2,7]"},
		{func(b *B) { nn.NewGRU(b, "l", 3, 4).Forward(b.Input("x", f32, 5, 2, 3), b.Input("h", f32, 2, 4)) }, "gru: h f32[2,4] has the wrong shape, want f32[1,2,4]"},
		{func(b *B) { nn.GELU{Approximate: "erf"}.Forward(x(b)) }, `gelu: approximate must be "none" or "tanh", have "erf"`},
		{func(b *B) { nn.NewLinear(b, "fc", 1, 1, nn.LinearOptions{}, nn.LinearOptions{}) }, "pass at most one options value, have 2"},
		{func(b *B) { nn.NewTransformerEncoderLayer(b, "t", 8, 2, tel{Activation: "tanh"}) }, `transformer encoder layer: activation must be "relu" or "gelu", have "tanh"`},
		{func(b *B) { v := x(b); nn.NewMultiheadAttention(b, "a", 8, 2).Forward(v, v, v, false) }, "multihead attention: want query, key and value of embed dim 8"},
	} {
		at := reftest.LineOf(tc.f)
		_, err := frontend.Build("m", tc.f)
		var fe *frontend.Error
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Msg, tc.want) || fe.Pos != at {
			t.Errorf("got  %v\nwant %s: %s", err, at, tc.want)
		}
	}
}
