package examples_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/examples/cnn"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/examples/linreg"
	"github.com/gcomp/gcomp/examples/lstm"
	"github.com/gcomp/gcomp/examples/mlp"
	"github.com/gcomp/gcomp/examples/rnn"
	"github.com/gcomp/gcomp/examples/transformer"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// Every example builds and verifies, with the interface names and types the issue specifies.
func TestExamples(t *testing.T) {
	for _, tc := range []struct {
		name    string
		model   func(*frontend.Builder)
		inputs  []string // "name:type"
		outputs []string
		params  []string // the first ones, in declaration order (PyTorch's state_dict order)
		nparams int
	}{
		{"linreg", linreg.Model, []string{"x:f32[8,2]"}, []string{"y:f32[8,5]"},
			[]string{"linear.weight:f32[5,2]", "linear.bias:f32[5]"}, 2},
		{"mlp", mlp.Model, []string{"x:f32[16,64]"}, []string{"y:f32[16,10]"},
			[]string{"0.weight:f32[32,64]", "0.bias:f32[32]", "1.weight:f32[10,32]", "1.bias:f32[10]"}, 4},
		{"cnn", cnn.Model, []string{"x:f32[64,3,28,28]"}, []string{"logits:f32[64,10]"},
			[]string{"conv1.weight:f32[16,3,3,3]", "conv1.bias:f32[16]", "conv2.weight:f32[32,16,3,3]", "conv2.bias:f32[32]",
				"fc1.weight:f32[128,1568]", "fc1.bias:f32[128]", "fc2.weight:f32[10,128]", "fc2.bias:f32[10]"}, 8},
		{"rnn", rnn.Model, []string{"input:f32[1,57]", "hidden:f32[1,128]"}, []string{"output:f32[1,18]", "hidden_next:f32[1,128]"},
			[]string{"i2h.weight:f32[128,185]", "i2h.bias:f32[128]", "i2o.weight:f32[18,185]", "i2o.bias:f32[18]"}, 4},
		{"lstm", lstm.Model, []string{"x:f32[4,10,16]", "h0:f32[2,4,32]", "c0:f32[2,4,32]"},
			[]string{"out:f32[4,10,32]", "h_n:f32[2,4,32]", "c_n:f32[2,4,32]"},
			[]string{"lstm.weight_ih_l0:f32[128,16]", "lstm.weight_hh_l0:f32[128,32]", "lstm.bias_ih_l0:f32[128]", "lstm.bias_hh_l0:f32[128]",
				"lstm.weight_ih_l1:f32[128,32]", "lstm.weight_hh_l1:f32[128,32]", "lstm.bias_ih_l1:f32[128]", "lstm.bias_hh_l1:f32[128]"}, 8},
		{"transformer", transformer.Model, []string{"src:f32[2,16,64]"}, []string{"y:f32[2,16,64]"},
			[]string{"self_attn.in_proj_weight:f32[192,64]", "self_attn.in_proj_bias:f32[192]",
				"self_attn.out_proj.weight:f32[64,64]", "self_attn.out_proj.bias:f32[64]",
				"linear1.weight:f32[128,64]", "linear1.bias:f32[128]", "linear2.weight:f32[64,128]", "linear2.bias:f32[64]",
				"norm1.weight:f32[64]", "norm1.bias:f32[64]", "norm2.weight:f32[64]", "norm2.bias:f32[64]"}, 12},
		{"gpt", gpt.Model, []string{"tokens:i64[1,64]"}, []string{"logits:f32[1,64,512]"},
			[]string{"transformer.wte.weight:f32[512,128]", "transformer.wpe.weight:f32[64,128]",
				"transformer.h.0.ln_1.weight:f32[128]", "transformer.h.0.ln_1.bias:f32[128]",
				"transformer.h.0.attn.c_attn.weight:f32[384,128]", "transformer.h.0.attn.c_attn.bias:f32[384]",
				"transformer.h.0.attn.c_proj.weight:f32[128,128]", "transformer.h.0.attn.c_proj.bias:f32[128]",
				"transformer.h.0.ln_2.weight:f32[128]", "transformer.h.0.ln_2.bias:f32[128]",
				"transformer.h.0.mlp.c_fc.weight:f32[512,128]", "transformer.h.0.mlp.c_fc.bias:f32[512]",
				"transformer.h.0.mlp.c_proj.weight:f32[128,512]", "transformer.h.0.mlp.c_proj.bias:f32[128]"}, 2 + 12*2 + 2},
		{"gpt2small", gpt.GPT2Small, []string{"tokens:i64[1,128]"}, []string{"logits:f32[1,128,50257]"},
			[]string{"transformer.wte.weight:f32[50257,768]", "transformer.wpe.weight:f32[128,768]"}, 2 + 12*12 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := frontend.Build(tc.name, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got []string, want []string, n int) {
				t.Helper()
				if len(got) != n {
					t.Errorf("%d %s, want %d: %v", len(got), what, n, got)
				}
				for i, w := range want {
					if i >= len(got) || got[i] != w {
						t.Errorf("%s %d: got %v, want %s", what, i, got[min(i, len(got)-1)], w)
					}
				}
			}
			check("inputs", typed(g.Inputs()), tc.inputs, len(tc.inputs))
			var outs []string
			for _, o := range g.Outputs {
				outs = append(outs, o.Name+":"+o.Value.Type.String())
			}
			check("outputs", outs, tc.outputs, len(tc.outputs))
			check("params", typed(g.Params()), tc.params, tc.nparams)
			for _, v := range g.Values {
				if v.Pos == "" || !strings.HasPrefix(v.Pos, "model.go:") {
					t.Fatalf("%s has position %q, want model.go:LINE", g.Format(v), v.Pos)
				}
			}
		})
	}
}

func typed(vs []*ir.Value) []string {
	var s []string
	for _, v := range vs {
		s = append(s, v.Name+":"+v.Type.String())
	}
	return s
}

// The gpt example declares the range of its token input, so random inputs are valid token ids.
func TestGPTTokenRange(t *testing.T) {
	g, err := frontend.Build("gpt", gpt.Model)
	if err != nil {
		t.Fatal(err)
	}
	if r := g.Lookup("tokens").Attrs.Ints("range"); len(r) != 2 || r[0] != 0 || r[1] != gpt.VocabSize {
		t.Errorf("tokens range = %v, want [0 %d]", r, gpt.VocabSize)
	}
}

// BenchmarkBuildGPT2Small times building and verifying the GPT-2 small graph.
func BenchmarkBuildGPT2Small(b *testing.B) {
	for b.Loop() {
		if _, err := frontend.Build("gpt2small", gpt.GPT2Small); err != nil {
			b.Fatal(err)
		}
	}
}
