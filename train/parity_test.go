package train

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// mix32 is scripts/torch_train_reference.py's hash: n values in [0, 1), multiples of 2^-24.
func mix32(n int, salt uint32) []float64 {
	out := make([]float64, n)
	for i := range out {
		h := uint32(i)*0x9E3779B1 + salt*0x7F4A7C15 + 12345
		h ^= h >> 16
		h *= 0x85EBCA6B
		h ^= h >> 13
		h *= 0xC2B2AE35
		h ^= h >> 16
		out[i] = float64(h>>8) / (1 << 24)
	}
	return out
}

// hashUniform is the script's uniform(): U(-bound, bound) in f64, rounded once to t's dtype.
func hashUniform(t ir.Type, salt uint32, bound float64) *tensor.Tensor {
	u := mix32(t.Shape.NumElements(), salt)
	for i := range u {
		u[i] = tensor.RoundFloat(t.DType, (2*u[i]-1)*bound)
	}
	return tensor.FromFloats(t, u)
}

func hashLabels(n int, salt uint32, classes int) *tensor.Tensor {
	u := mix32(n, salt)
	l := &tensor.Tensor{Type: ir.T(ir.I64, n), I: make([]int64, n)}
	for i := range u {
		l.I[i] = int64(u[i] * float64(classes))
	}
	return l
}

func readNPY(t *testing.T, name string) *tensor.Tensor {
	t.Helper()
	x, err := tensor.ReadNPYFile(filepath.Join("..", "testdata", "torch_train", name))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

const batch, batches = 32, 4

func mlpModel(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, batch, 784)
	y := b.Input("y", frontend.I64, batch)
	fc1, fc2 := nn.NewLinear(b, "fc1", 784, 256), nn.NewLinear(b, "fc2", 256, 10)
	b.Output("loss", frontend.CrossEntropyLoss(fc2.Forward(fc1.Forward(x).Relu()), y))
}

func mlpParams() map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{
		"fc1.weight": hashUniform(ir.T(ir.F32, 256, 784), 1, 1/math.Sqrt(784)),
		"fc1.bias":   hashUniform(ir.T(ir.F32, 256), 2, 1/math.Sqrt(784)),
		"fc2.weight": hashUniform(ir.T(ir.F32, 10, 256), 3, 1/math.Sqrt(256)),
		"fc2.bias":   hashUniform(ir.T(ir.F32, 10), 4, 1/math.Sqrt(256)),
	}
}

func mlpBatch(i int) (map[string]*tensor.Tensor, error) {
	k := uint32(i % batches)
	x := tensor.FromFloats(ir.T(ir.F32, batch, 784), mix32(batch*784, 100+k))
	return map[string]*tensor.Tensor{"x": x, "y": hashLabels(batch, 200+k, 10)}, nil
}

// TestMLPParity trains the MLP for 100 steps with SGD (momentum 0.9) and with Adam on the
// reference device and compares every step's loss with PyTorch's (within 1e-4 relative).
func TestMLPParity(t *testing.T) {
	steps := 100
	if testing.Short() {
		steps = 10
	}
	tests := []struct {
		file string
		opt  Optimizer
	}{
		{"mlp_sgd.npy", &SGD{LR: 0.01, Momentum: 0.9}},
		{"mlp_adam.npy", NewAdam()},
	}
	for _, tt := range tests {
		t.Run(tt.opt.Name(), func(t *testing.T) {
			want := readNPY(t, tt.file)
			s, err := Step("mlp", mlpModel, tt.opt, Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := RunRef(s, mlpParams(), steps, mlpBatch)
			if err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i, got := range r.Losses {
				rel := math.Abs(got-want.F[i]) / math.Abs(want.F[i])
				worst = max(worst, rel)
				if rel > 1e-4 {
					t.Errorf("step %d: loss %.8g, PyTorch %.8g (relative difference %.2g)", i, got, want.F[i], rel)
				}
			}
			t.Logf("%d steps, final loss %.6g (PyTorch %.6g), largest relative difference %.2g",
				steps, r.Losses[steps-1], want.F[steps-1], worst)
		})
	}
}

// TestOptimizersMatchPyTorch runs every optimizer configuration of the reference script on a
// tiny f64 least-squares problem and compares the parameters after each step.
func TestOptimizersMatchPyTorch(t *testing.T) {
	tests := []struct {
		name string
		opt  Optimizer
	}{
		{"sgd", NewSGD(0.1)},
		{"sgd_momentum_dampening_wd", &SGD{LR: 0.05, Momentum: 0.8, Dampening: 0.3, WeightDecay: 0.01}},
		{"sgd_nesterov_wd", &SGD{LR: 0.05, Momentum: 0.9, Nesterov: true, WeightDecay: 0.02}},
		{"adam", &Adam{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}},
		{"adam_wd", &Adam{LR: 0.02, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.05}},
		{"adamw", func() Optimizer { o := NewAdamW(); o.LR = 0.02; return o }()},
	}
	model := func(b *frontend.Builder) {
		w := b.Param("w", ir.T(ir.F64, 2, 3), frontend.Zeros())
		bias := b.Param("b", ir.T(ir.F64, 2), frontend.Zeros())
		x := b.Input("x", frontend.F64, 5, 3)
		y := b.Input("y", frontend.F64, 5, 2)
		b.Output("loss", frontend.MSELoss(frontend.Linear(x, w, bias), y))
	}
	params := map[string]*tensor.Tensor{
		"w": hashUniform(ir.T(ir.F64, 2, 3), 301, 0.5),
		"b": hashUniform(ir.T(ir.F64, 2), 302, 0.5),
	}
	data := map[string]*tensor.Tensor{
		"x": hashUniform(ir.T(ir.F64, 5, 3), 303, 1),
		"y": hashUniform(ir.T(ir.F64, 5, 2), 304, 1),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := readNPY(t, "optim_"+tt.name+".npy")
			s, err := Step("tiny", model, tt.opt, Options{})
			if err != nil {
				t.Fatal(err)
			}
			tr := NewRefTrainer(s, params)
			steps, width := want.Type.Shape[0], want.Type.Shape[1]
			for i := range steps {
				if _, err := tr.Run(data); err != nil {
					t.Fatal(err)
				}
				got := append(append([]float64{}, tr.Params["w"].F...), tr.Params["b"].F...)
				for j, g := range got {
					w := want.F[i*width+j]
					if math.Abs(g-w) > 1e-12*max(1, math.Abs(w)) {
						t.Errorf("step %d, parameter element %d: %.17g, PyTorch %.17g", i, j, g, w)
					}
				}
			}
		})
	}
}

// TestCNNParity trains a small CNN (conv, ReLU, max pool, linear) for 20 SGD steps and compares
// the losses with PyTorch's: the conv2d and max_pool2d gradients against PyTorch's own.
func TestCNNParity(t *testing.T) {
	want := readNPY(t, "cnn_sgd.npy")
	s, err := Step("cnn", cnnModel, &SGD{LR: 0.05, Momentum: 0.9}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]*tensor.Tensor{
		"conv.weight": hashUniform(ir.T(ir.F32, 4, 1, 3, 3), 11, 1/3.0),
		"conv.bias":   hashUniform(ir.T(ir.F32, 4), 12, 1/3.0),
		"fc.weight":   hashUniform(ir.T(ir.F32, 10, 144), 13, 1/12.0),
		"fc.bias":     hashUniform(ir.T(ir.F32, 10), 14, 1/12.0),
	}
	data := func(i int) (map[string]*tensor.Tensor, error) {
		k := uint32(i % 2)
		x := tensor.FromFloats(ir.T(ir.F32, 4, 1, 12, 12), mix32(4*144, 400+k))
		return map[string]*tensor.Tensor{"x": x, "y": hashLabels(4, 500+k, 10)}, nil
	}
	r, err := RunRef(s, params, want.Len(), data)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range r.Losses {
		if rel := math.Abs(got-want.F[i]) / math.Abs(want.F[i]); rel > 1e-4 {
			t.Errorf("step %d: loss %.8g, PyTorch %.8g (relative difference %.2g)", i, got, want.F[i], rel)
		}
	}
}
