package suite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestExported imports models PyTorch exported (scripts/export_onnx.py: the example models and a
// small ViT with random weights, a symbolic batch) and checks the reference interpreter's
// outputs against PyTorch's for the same inputs, within the f32 tolerance rule of
// internal/tolerance; then compiles each and runs it on the simulator against the reference
// interpreter, as gcomp check does (not under -short).
//
// The matmulnbits* models (scripts/matmulnbits_models.py: onnxruntime's MatMulNBits contrib op
// with random packed weights) carry a NumPy reference's outputs instead of PyTorch's.
//
// GCOMP_EXPORTED=DIR checks the exports in DIR too (those too large to commit: ResNet-18,
// MobileNetV2, gpt; `scripts/export_onnx.py DIR`), on the reference interpreter only: at their
// exported sizes the simulator would take many minutes (docs/onnx.md has the gcomp check runs
// at a small --shape).
func TestExported(t *testing.T) {
	dirs := []string{filepath.Join("testdata", "exported")}
	if d := os.Getenv("GCOMP_EXPORTED"); d != "" {
		dirs = append(dirs, d)
	}
	for i, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.onnx"))
		if len(files) == 0 {
			t.Fatalf("no exported models in %s", dir)
		}
		for _, f := range files {
			t.Run(filepath.Base(f), func(t *testing.T) { checkExported(t, f, i == 0 && !testing.Short()) })
		}
	}
}

func checkExported(t *testing.T, f string, sim bool) {
	dir := filepath.Dir(f)
	name := strings.Split(filepath.Base(f), "_opset")[0]
	inputs := map[string]*tensor.Tensor{}
	shapes := map[string][]int{}
	ins, _ := filepath.Glob(filepath.Join(dir, name+"_inputs", "*.npy"))
	for _, p := range ins {
		x, err := tensor.ReadNPYFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.TrimSuffix(filepath.Base(p), ".npy")
		inputs[n], shapes[n] = x, x.Type.Shape
	}
	m, err := onnx.ImportFile(f, onnx.Options{Shapes: shapes})
	if err != nil {
		t.Fatal(err)
	}
	weights, err := m.Weights.Map()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ref.Run(m.Graph, inputs, weights)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range m.Outputs {
		want, err := tensor.ReadNPYFile(filepath.Join(dir, name+"_outputs", o.ONNX+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		within(t, o.ONNX, got[o.IR], want)
	}
	if !sim {
		return
	}
	res, err := compiler.Compile(m.Graph, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check.Run(res.Artifact, inputs, weights)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass() {
		var sb strings.Builder
		rep.WriteTable(&sb)
		t.Fatalf("the simulator does not match the reference interpreter:\n%s", sb.String())
	}
}

// TestExportedAttention: attention as torch 1.13 exports it from hand-written models (nanoGPT's
// matmul, scale, masked_fill, softmax, matmul; and a division with an additive mask), with the
// heads' reshapes and transposes around it, becomes one attention op at every opset 13-17, so
// the compiled model holds no [heads, T, T] scores.
func TestExportedAttention(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "exported", "attention*_opset*.onnx"))
	if len(files) != 10 {
		t.Fatalf("want the two attention models at opsets 13-17, have %d files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := onnx.ImportFile(f, onnx.Options{Shapes: map[string][]int{"x": {2, 16, 64}}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := passes.Run(m.Graph, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, k := range res.Kernels.Kernels {
				for _, v := range k.Ops {
					count[v.Op]++
				}
			}
			// One attention op, and no softmax left beside it (its exp would compute scores).
			if count[ops.AttentionOp] != 1 || count["exp"] != 0 {
				t.Errorf("%d attention ops and %d exp, want 1 and 0; kernels:\n%s", count[ops.AttentionOp], count["exp"], res.Kernels)
			}
		})
	}
}

// TestExportedQDQ: the fake-quantized models torch 1.13 exports (scripts/export_qdq.py: a
// QuantizeLinear/DequantizeLinear pair on the input, on each weight and after each Linear or
// Conv) compile to one kernel per run whose stages are the input's quantization and one
// contraction per layer, besides the weights' dequantize stages: each activation pair after a
// layer is in that contraction's epilogue (with the bias and the ReLU), never a kernel or a
// stage of its own. Each weight's QuantizeLinear is computed at import, so the weights are
// int8 parameters (no f32 copy of them is a parameter) and a Linear's weight is read as int8
// on every run, with no bind-time kernel.
func TestExportedQDQ(t *testing.T) {
	for _, c := range []struct {
		file   string
		shape  []int
		layers int
		bind   int // bind-time kernels: a Conv's int8 weight is dequantized when weights are bound
	}{
		{"qdq_mlp_opset13.onnx", []int{4, 32}, 2, 0},
		{"qdq_conv_opset13.onnx", []int{1, 3, 8, 8}, 2, 2},
	} {
		t.Run(c.file, func(t *testing.T) {
			m, err := onnx.ImportFile(filepath.Join("testdata", "exported", c.file), onnx.Options{Shapes: map[string][]int{"x": c.shape}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := passes.Run(m.Graph, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			int8 := 0
			for _, name := range m.Weights.Names() {
				if ty, _ := m.Weights.Type(name); len(ty.Shape) >= 2 {
					if ty.DType != ir.I8 {
						t.Errorf("weight %s is %s, want i8", name, ty)
					}
					int8++
				}
			}
			if int8 != c.layers {
				t.Errorf("%d int8 weights, want %d", int8, c.layers)
			}
			kernels, stages, contractions, bind := 0, 0, 0, 0
			for _, k := range res.Kernels.Kernels {
				if k.BindTime {
					bind++
					continue
				}
				kernels++
				parts := k.Stages
				if len(parts) == 0 {
					parts = []*passes.Kernel{k}
				}
				for _, s := range parts {
					if len(s.Ops) == 1 && s.Ops[0].Op == "dequantize" {
						continue // a weight's prologue
					}
					stages++
					if s.Kind == passes.Contraction {
						contractions++
					}
				}
			}
			if kernels != 1 || stages != c.layers+1 || contractions != c.layers || bind != c.bind {
				t.Errorf("%d kernels per run, %d stages besides dequantize, %d of them contractions, %d bind-time kernels; want 1, %d, %d, %d:\n%s",
					kernels, stages, contractions, bind, c.layers+1, c.layers, c.bind, res.Kernels)
			}
		})
	}
}
