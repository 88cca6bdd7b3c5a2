// Package examples lists the example models, so that every package whose tests run them (the
// loader, the passes, codegen, the runtimes, the demo) walks one list:
//
//	for _, ex := range examples.All() {
//		g, err := frontend.Build(ex.Name, ex.Model)
//		...
//	}
//
// Each model lives in examples/DIR/model.go, an ordinary Go file that gcomp also loads through
// its interpreter.
package examples

import (
	"github.com/gcomp/gcomp/examples/cnn"
	fashionbncnn "github.com/gcomp/gcomp/examples/fashion/bncnn"
	fashioncnn "github.com/gcomp/gcomp/examples/fashion/cnn"
	fashionmlp "github.com/gcomp/gcomp/examples/fashion/mlp"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/examples/gpt2"
	"github.com/gcomp/gcomp/examples/linreg"
	"github.com/gcomp/gcomp/examples/llama"
	"github.com/gcomp/gcomp/examples/lstm"
	"github.com/gcomp/gcomp/examples/mlp"
	"github.com/gcomp/gcomp/examples/mobilenet"
	"github.com/gcomp/gcomp/examples/resnet"
	"github.com/gcomp/gcomp/examples/rnn"
	"github.com/gcomp/gcomp/examples/swish"
	"github.com/gcomp/gcomp/examples/transformer"
	"github.com/gcomp/gcomp/examples/unet"
	"github.com/gcomp/gcomp/frontend"
)

// Example is one example model.
type Example struct {
	Name  string // "cnn"; "fashion_cnn" for examples/fashion/cnn
	Dir   string // its directory from the repository root: "examples/fashion/cnn"
	Model func(*frontend.Builder)
	// Slow marks the models that take minutes on the PTX simulator (tests skip them with -short).
	Slow bool
}

// Tutorials are the models of the PyTorch tutorials, in the order the docs list them, then
// three vision architectures built from BatchNorm, ReLU6, adaptive pooling and nearest
// upsampling (a ResNet, a MobileNet block and a U-Net).
var Tutorials = []Example{
	{"linreg", "examples/linreg", linreg.Model, false},
	{"mlp", "examples/mlp", mlp.Model, false},
	{"cnn", "examples/cnn", cnn.Model, true},
	{"rnn", "examples/rnn", rnn.Model, false},
	{"lstm", "examples/lstm", lstm.Model, true},
	{"transformer", "examples/transformer", transformer.Model, false},
	{"gpt", "examples/gpt", gpt.Model, true},
	{"resnet", "examples/resnet", resnet.Model, true},
	{"mobilenet", "examples/mobilenet", mobilenet.Model, true},
	{"unet", "examples/unet", unet.Model, true},
}

// Fashion are the Fashion-MNIST classifiers that gcomp train trains.
var Fashion = []Example{
	{"fashion_mlp", "examples/fashion/mlp", fashionmlp.Model, false},
	{"fashion_cnn", "examples/fashion/cnn", fashioncnn.Model, true},
	{"fashion_bncnn", "examples/fashion/bncnn", fashionbncnn.Model, true},
}

// LanguageModels are the decode programs of the text-generation models (package lm runs them with
// their prefill programs over a KV cache).
var LanguageModels = []Example{
	{"gpt2", "examples/gpt2", gpt2.Model, false},
	{"llama", "examples/llama", llama.Model, false},
}

// All is Tutorials, then Fashion, then LanguageModels.
func All() []Example {
	return append(append(append([]Example(nil), Tutorials...), Fashion...), LanguageModels...)
}

// Custom are the examples with a CUDA kernel of their own (docs/custom.md). They are not in
// All: compiling them needs NVRTC, and their kernels are not gcomp's to generate.
var Custom = []Example{
	{"swish", "examples/swish", swish.Model, false},
}
