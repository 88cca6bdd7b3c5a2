package nn_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/internal/reftest"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes/autodiff"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// torchCases builds, for every directory of testdata/torch (written by
// scripts/torch_layers_reference.py), the same layer with gcomp's modules. The layer's
// parameters are declared by the modules, so PyTorch's state_dict keys must equal their names.
var torchCases = map[string]func(b *frontend.Builder, x *frontend.Tensor) []*frontend.Tensor{
	"clamp":              act(func(x *T) *T { return x.Clamp(-1.5, 2.5) }),
	"clamp_inverted":     act(func(x *T) *T { return x.Clamp(2, -1) }),
	"hardtanh":           mod(nn.Hardtanh{}),
	"hardtanh_0_3":       mod(nn.Hardtanh{MinVal: 0, MaxVal: 3}),
	"relu6":              mod(nn.ReLU6{}),
	"hardswish":          mod(nn.Hardswish{}),
	"hardsigmoid":        mod(nn.Hardsigmoid{}),
	"leaky_relu":         mod(nn.LeakyReLU{}),
	"leaky_relu_0.2":     mod(nn.LeakyReLU{NegativeSlope: 0.2}),
	"elu":                mod(nn.ELU{}),
	"elu_0.5":            mod(nn.ELU{Alpha: 0.5}),
	"softplus":           mod(nn.Softplus{}),
	"softplus_beta2_th5": mod(nn.Softplus{Beta: 2, Threshold: 5}),
	"mish":               mod(nn.Mish{}),
	"prelu":              built(func(b *B) nn.Module { return nn.NewPReLU(b, "") }),
	"prelu3":             built(func(b *B) nn.Module { return nn.NewPReLU(b, "", nn.PReLUOptions{NumParameters: 3}) }),

	"batchnorm2d": built(func(b *B) nn.Module { return nn.NewBatchNorm2d(b, "", 3) }),
	"batchnorm2d_train": built(func(b *B) nn.Module {
		return nn.NewBatchNorm2d(b, "", 3, nn.BatchNormOptions{Momentum: 0.3})
	}),
	"batchnorm1d_train": built(func(b *B) nn.Module { return nn.NewBatchNorm1d(b, "", 5) }),
	"batchnorm1d":       built(func(b *B) nn.Module { return nn.NewBatchNorm1d(b, "", 5, nn.BatchNormOptions{Eps: 1e-3}) }),
	"batchnorm1d_3d":    built(func(b *B) nn.Module { return nn.NewBatchNorm1d(b, "", 3) }),
	"groupnorm":         built(func(b *B) nn.Module { return nn.NewGroupNorm(b, "", 2, 6) }),
	"instancenorm2d":    built(func(b *B) nn.Module { return nn.NewInstanceNorm2d(b, "", 3) }),
	"instancenorm2d_affine": built(func(b *B) nn.Module {
		return nn.NewInstanceNorm2d(b, "", 3, nn.InstanceNormOptions{Affine: true})
	}),

	"conv1d": built(func(b *B) nn.Module { return nn.NewConv1d(b, "", 4, 6, 3, nn.Conv1dOptions{Stride: 2, Padding: 1}) }),
	"conv1d_groups_dil": built(func(b *B) nn.Module {
		return nn.NewConv1d(b, "", 4, 2, 3, nn.Conv1dOptions{Dilation: 2, Groups: 2, NoBias: true})
	}),
	"conv2d_rect": built(func(b *B) nn.Module {
		return nn.NewConv2d(b, "", 3, 4, 0, nn.Conv2dOptions{KernelHW: [2]int{3, 2}, StrideHW: [2]int{2, 1}, PaddingHW: [2]int{1, 0}, DilationHW: [2]int{1, 2}})
	}),
	"conv2d_same": built(func(b *B) nn.Module {
		return nn.NewConv2d(b, "", 2, 3, 0, nn.Conv2dOptions{KernelHW: [2]int{4, 3}, Same: true})
	}),
	"conv2d_same_dil": built(func(b *B) nn.Module {
		return nn.NewConv2d(b, "", 2, 2, 3, nn.Conv2dOptions{Same: true, Dilation: 2})
	}),
	"conv_transpose2d": built(func(b *B) nn.Module {
		return nn.NewConvTranspose2d(b, "", 4, 3, 3, nn.ConvTranspose2dOptions{Stride: 2, Padding: 1, OutputPadding: 1})
	}),
	"conv_transpose2d_groups": built(func(b *B) nn.Module {
		return nn.NewConvTranspose2d(b, "", 4, 6, 0, nn.ConvTranspose2dOptions{KernelHW: [2]int{2, 3},
			StrideHW: [2]int{1, 2}, PaddingHW: [2]int{0, 2}, Groups: 2, DilationHW: [2]int{2, 1}})
	}),
	"conv_transpose2d_tiles": built(func(b *B) nn.Module {
		return nn.NewConvTranspose2d(b, "", 3, 2, 2, nn.ConvTranspose2dOptions{Stride: 2})
	}),
	"conv_transpose2d_tiles_pad": built(func(b *B) nn.Module {
		return nn.NewConvTranspose2d(b, "", 2, 3, 3, nn.ConvTranspose2dOptions{Stride: 3, Padding: 1, OutputPadding: 2})
	}),
	"conv_transpose2d_plain": built(func(b *B) nn.Module {
		return nn.NewConvTranspose2d(b, "", 2, 1, 3, nn.ConvTranspose2dOptions{NoBias: true})
	}),

	"adaptive_avg_pool2d":     mod(nn.AdaptiveAvgPool2d{OutputSize: [2]int{3, 4}}),
	"adaptive_avg_pool2d_div": mod(nn.AdaptiveAvgPool2d{OutputSize: [2]int{2, 2}}),
	"adaptive_avg_pool2d_up":  mod(nn.AdaptiveAvgPool2d{OutputSize: [2]int{5, 3}}),
	"adaptive_avg_pool2d_1":   mod(nn.AdaptiveAvgPool2d{OutputSize: [2]int{1, 1}}),
	"adaptive_max_pool2d":     mod(nn.AdaptiveMaxPool2d{OutputSize: [2]int{3, 4}}),
	"adaptive_max_pool2d_1":   mod(nn.AdaptiveMaxPool2d{OutputSize: [2]int{1, 1}}),
	"flip":                    act(func(x *T) *T { return x.Flip(0, 2) }),
	"upsample_nearest_2":      mod(nn.Upsample{ScaleFactor: [2]float64{2, 2}}),
	"upsample_nearest_size":   mod(nn.Upsample{Size: [2]int{7, 3}}),
	"upsample_bilinear":       mod(nn.Upsample{ScaleFactor: [2]float64{2, 2}, Mode: "bilinear"}),
	"upsample_bilinear_ac":    mod(nn.Upsample{ScaleFactor: [2]float64{2, 2}, Mode: "bilinear", AlignCorners: true}),
	"interpolate_bilinear_size": act(func(x *T) *T {
		return frontend.Interpolate(x, frontend.InterpolateOptions{Size: [2]int{3, 7}, Mode: "bilinear"})
	}),
	"interpolate_bilinear_size_ac": act(func(x *T) *T {
		return frontend.Interpolate(x, frontend.InterpolateOptions{Size: [2]int{3, 7}, Mode: "bilinear", AlignCorners: true})
	}),
	"cumsum":  act(func(x *T) *T { return x.Cumsum(1) }),
	"cumsum0": act(func(x *T) *T { return x.Cumsum(0) }),

	"argmax": act(func(x *T) *T { return x.Argmax(1, false) }),
	"argmin": act(func(x *T) *T { return x.Argmin(1, false) }),
	"topk": func(b *B, x *T) []*T {
		v, i := x.Topk(3, 1, true)
		return []*T{v, i}
	},
	"topk_smallest": func(b *B, x *T) []*T {
		v, i := x.Topk(2, 1, false)
		return []*T{v, i}
	},

	"transformer_encoder": built(func(b *B) nn.Module {
		enc := nn.NewTransformerEncoder(b, "", 8, 2, 2, nn.TransformerEncoderOptions{
			Layer: nn.TransformerEncoderLayerOptions{DimFeedforward: 16, BatchFirst: true}})
		return nn.Func(enc.Forward)
	}),
}

// strictCases are held to a few f32 rounding errors relative to PyTorch's float64 values, with
// no absolute slack: softplus keeps its precision for large negative inputs (log1p, not
// log(1 + y)).
var strictCases = map[string]bool{"softplus": true, "softplus_beta2_th5": true, "relu6": true, "leaky_relu": true, "clamp": true}

type (
	B = frontend.Builder
	T = frontend.Tensor
)

func act(f func(x *T) *T) func(*B, *T) []*T { return func(_ *B, x *T) []*T { return []*T{f(x)} } }
func mod(m nn.Module) func(*B, *T) []*T     { return act(m.Forward) }
func built(f func(b *B) nn.Module) func(*B, *T) []*T {
	return func(b *B, x *T) []*T { return []*T{f(b).Forward(x)} }
}

// TestAgainstPyTorch checks every layer forward (reference interpreter) and backward (autodiff)
// against PyTorch's float64 values, in f32: the input and parameters are PyTorch's rounded to
// f32, so the tolerance covers f32 arithmetic, not a different formula.
func TestAgainstPyTorch(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join("testdata", "torch"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		name := d.Name()
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			build := torchCases[name]
			if build == nil {
				t.Fatalf("no case builds testdata/torch/%s", name)
			}
			checkTorchCase(t, filepath.Join("testdata", "torch", name), build)
		})
	}
	for name := range torchCases {
		if !seen[name] {
			t.Errorf("case %s has no PyTorch values in testdata/torch", name)
		}
	}
}

func readNPY(t *testing.T, dir, name string) *tensor.Tensor {
	t.Helper()
	x, err := tensor.ReadNPYFile(filepath.Join(dir, name+".npy"))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name+".npy"))
	return err == nil
}

// torchCase is one case's graph (forward, and loss = Σ y·u when PyTorch has gradients), its
// values and what to differentiate.
type torchCase struct {
	g              *ir.Graph
	outs, wrt      []string
	inputs, params map[string]*tensor.Tensor
}

func loadTorchCase(t *testing.T, dir string, build func(*B, *T) []*T) torchCase {
	t.Helper()
	x := readNPY(t, dir, "x")
	lookup := func(name string) *tensor.Tensor {
		if !exists(dir, name) {
			return nil
		}
		return readNPY(t, dir, name)
	}
	keys, _ := filepath.Glob(filepath.Join(dir, "p.*.npy"))
	return torchGraph(t, filepath.Base(dir), build, ir.F32, x, lookup, len(keys))
}

// torchGraph builds the case called name in dtype dt (its input x and the module's parameters,
// frontend.WithParamDType), with the loss Σ y·u where PyTorch's values (lookup: nil where absent)
// have u, and binds PyTorch's parameters, of which there are nparams.
func torchGraph(t *testing.T, name string, build func(*B, *T) []*T, dt ir.DType, x *tensor.Tensor, lookup func(string) *tensor.Tensor, nparams int) torchCase {
	t.Helper()
	var outs []string
	opts := []frontend.Option{frontend.WithParamDType(dt)}
	if strings.HasSuffix(name, "_train") {
		opts = append(opts, frontend.WithTraining())
	}
	g, err := frontend.Build("torch", func(b *frontend.Builder) {
		ys := build(b, b.Input("x", dt, x.Type.Shape...))
		var loss *T
		for i, y := range ys {
			name, uname := "y", "u"
			if len(ys) > 1 {
				name, uname = "y."+string(rune('0'+i)), "u."+string(rune('0'+i))
			}
			b.Output(strings.ReplaceAll(name, ".", "_"), y)
			outs = append(outs, name)
			if u := lookup(uname); u != nil {
				l := y.Mul(b.Tensor(reftest.Floats(u), dt, u.Type.Shape...)).Sum()
				if loss == nil {
					loss = l
				} else {
					loss = loss.Add(l)
				}
			}
		}
		if loss != nil {
			b.Output("loss", loss)
		}
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]*tensor.Tensor{"x": tensor.FromFloats(ir.T(dt, x.Type.Shape...), reftest.Floats(x))}
	params := map[string]*tensor.Tensor{}
	wrt := []string{"x"}
	for _, p := range g.Params() {
		key := strings.TrimPrefix(p.Name, ".")
		v := lookup("p." + key)
		if v == nil {
			t.Fatalf("parameter %s is not in PyTorch's state_dict", key)
		}
		if !v.Type.Shape.Equal(p.Type.Shape) {
			t.Fatalf("parameter %s is %v, PyTorch's %v", key, p.Type, v.Type.Shape)
		}
		params[p.Name] = tensor.FromFloats(p.Type, reftest.Floats(v))
		if lookup("gp."+key) != nil {
			wrt = append(wrt, p.Name)
		}
	}
	if nparams != len(g.Params()) {
		t.Fatalf("PyTorch's state_dict has %d entries, the module %d parameters", nparams, len(g.Params()))
	}
	return torchCase{g, outs, wrt, inputs, params}
}

func checkTorchCase(t *testing.T, dir string, build func(*B, *T) []*T) {
	c := loadTorchCase(t, dir, build)
	g, outs, wrt, inputs, params := c.g, c.outs, c.wrt, c.inputs, c.params
	atol, rtol := 2e-5, 1e-4
	if strictCases[filepath.Base(dir)] {
		atol, rtol = 0, 5e-7
	}
	got, err := ref.Run(g, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range outs {
		want := readNPY(t, dir, name)
		y := got[strings.ReplaceAll(name, ".", "_")]
		if !y.Type.Shape.Equal(want.Type.Shape) {
			t.Fatalf("%s is %v, PyTorch's %v", name, y.Type, want.Type.Shape)
		}
		near(t, name, reftest.Floats(y), reftest.Floats(want), atol, rtol)
	}
	// In training mode: the buffers after the step, as PyTorch left them.
	for _, o := range g.Outputs {
		if key, ok := strings.CutPrefix(o.Name, frontend.BufferPrefix); ok {
			near(t, o.Name, reftest.Floats(got[o.Name]), reftest.Floats(readNPY(t, dir, "b."+strings.TrimPrefix(key, "."))), atol, rtol)
		}
	}
	if !exists(dir, "gx") {
		return
	}
	gg, err := autodiff.Grad(g, "loss", wrt)
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.Verify(gg); err != nil {
		t.Fatal(err)
	}
	grads, err := ref.Run(gg, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range wrt {
		file := "gx"
		if name != "x" {
			file = "gp." + strings.TrimPrefix(name, ".")
		}
		near(t, "d loss/d "+name, reftest.Floats(grads[autodiff.GradPrefix+name]), reftest.Floats(readNPY(t, dir, file)), atol, rtol)
	}
}

// near fails unless got and want agree within atol + rtol·|want| (NaN matching NaN).
func near(t *testing.T, what string, got, want []float64, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, PyTorch %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if math.IsNaN(got[i]) && math.IsNaN(want[i]) {
			continue
		}
		if d := math.Abs(got[i] - want[i]); !(d <= atol+rtol*math.Abs(want[i])) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %v, PyTorch %v", what, i, got[i], want[i])
			}
		}
	}
}

// TestCompiledLayers compiles every case, forward and backward, and runs it on the PTX
// simulator with its checks against the reference interpreter: the composites lower to kernels
// that compute what they mean.
func TestCompiledLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the simulator runs every case")
	}
	for name, build := range torchCases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "torch", name)
			c := loadTorchCase(t, dir, build)
			g := c.g
			if exists(dir, "gx") {
				var err error
				if g, err = autodiff.Grad(g, "loss", c.wrt); err != nil {
					t.Fatal(err)
				}
			}
			checkCompiled(t, g, c, compiler.Options{})
		})
	}
}

// checkCompiled compiles g with opt and runs it on the PTX simulator with c's values, held to the
// reference interpreter by check.Run's error bounds.
func checkCompiled(t *testing.T, g *ir.Graph, c torchCase, opt compiler.Options) {
	t.Helper()
	res, err := compiler.Compile(g, opt)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check.Run(res.Artifact, c.inputs, c.params)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Outputs {
		if !o.Pass() {
			t.Errorf("simulator: %s: %d elements outside tolerance (max abs %g, max rel %g); first %s", o.Name, o.Bad, o.MaxAbs, o.MaxRel, o.First)
		}
	}
}
