package check_test

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvrtc"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/passes/autodiff"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

const swishCU = `// y = x * sigmoid(x), one thread per element
extern "C" __global__ void swish(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / (1.0f + expf(-x[i]));
}
`

func swishRef(in []*frontend.HostTensor, _ []float64) *frontend.HostTensor {
	y := frontend.NewHostTensor(in[0].Type)
	for i, v := range in[0].F {
		y.F[i] = float64(float32(v / (1 + math.Exp(-v))))
	}
	return y
}

// mixed is a model mixing a custom kernel with fused gcomp kernels: matmul, then the user's
// swish, then tanh + add fused by gcomp.
func mixed(k frontend.Kernel) func(b *frontend.Builder) {
	return func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 4, 100)
		w := b.Param("w", frontend.T(frontend.F32, 100, 100), frontend.DefaultUniform(100))
		h := x.Matmul(w)
		if k.Scalars == nil {
			k.Scalars = []frontend.Scalar{frontend.IntArg(h.Type().Shape.NumElements())}
		}
		b.Output("y", b.Custom(k, h).Tanh().Add(x))
	}
}

// compileCheck builds model, compiles it for sm_<sm>, and runs `gcomp check` on it.
func compileCheck(t *testing.T, model func(*frontend.Builder), sm int) (*compiler.Result, *check.Report, error) {
	t.Helper()
	g, err := frontend.Build("m", model)
	if err != nil {
		return nil, nil, err
	}
	res, err := compiler.Compile(g, compiler.Options{Target: ptx.Target{SM: sm}})
	if err != nil {
		return nil, nil, err
	}
	inputs, params := values(t, g, 1)
	rep, err := check.Run(res.Artifact, inputs, params)
	return res, rep, err
}

// NVRTC compiles the kernel, ptxas assembles the module for sm_80 and sm_90, and the
// simulator's results match the Go reference, all checks on.
func TestCustomCUDAKernel(t *testing.T) {
	nvrtc.Require(t)
	for _, sm := range []int{80, 90} {
		res, rep, err := compileCheck(t, mixed(frontend.Kernel{Name: "swish", Source: swishCU, Reference: swishRef}), sm)
		if err != nil {
			t.Fatalf("sm_%d: %v", sm, err)
		}
		requirePass(t, rep)
		plan := res.Artifact.Plan
		if len(plan.Kernels) != 3 || plan.Kernels[1].Name != "k1_custom_swish" || plan.Kernels[1].Entry != "swish" {
			t.Fatalf("sm_%d: kernels %+v", sm, plan.Kernels)
		}
		if k := plan.Kernels[1]; k.Grid != [3]int{2, 1, 1} || k.Block != [3]int{256, 1, 1} || len(k.Args) != 3 ||
			k.Args[2].Kind != "scalar" || k.Args[2].Type != "i32" || k.Args[2].Value != 400 {
			t.Errorf("sm_%d: custom launch %+v", sm, k)
		}
		text := string(res.Artifact.PTX)
		if n := strings.Count(text, ".version"); n != 1 {
			t.Errorf("sm_%d: the module has %d .version lines", sm, n)
		}
		if !strings.Contains(text, `.file	1 "swish.inline.cu"`) || !strings.Contains(text, ".loc\t1 4") {
			t.Errorf("sm_%d: the module lacks the kernel's line information", sm)
		}
		ptxas.Require(t)
		for _, arch := range []string{"sm_80", "sm_90"} {
			if sm == 90 && arch == "sm_80" {
				continue // sm_90 PTX does not assemble for an older GPU
			}
			r, err := ptxas.Assemble(res.Artifact.PTX, arch)
			if err != nil {
				t.Fatalf("sm_%d module for %s: %v", sm, arch, err)
			}
			if r.Kernel("swish") == nil {
				t.Errorf("%s: no swish entry in %+v", arch, r.Kernels)
			}
		}
	}
}

// The same model twice compiles its kernel once (NVRTC's cache).
func TestCustomCompiledOnce(t *testing.T) {
	c := nvrtc.Require(t)
	src := swishCU + "// once\n"
	for range 2 {
		if _, _, err := compileCheck(t, mixed(frontend.Kernel{Name: "swish", Source: src, Reference: swishRef}), 80); err != nil {
			t.Fatal(err)
		}
	}
	before := c.Compiles()
	if _, _, err := compileCheck(t, mixed(frontend.Kernel{Name: "swish", Source: src, Reference: swishRef}), 80); err != nil {
		t.Fatal(err)
	}
	if c.Compiles() != before {
		t.Errorf("compiling the same kernel again ran NVRTC")
	}
}

// scalePTX is a hand-written kernel: y[i] = s * x[i] for i < n.
const scalePTX = `.version 7.0
.target sm_80
.address_size 64

.visible .entry scale(.param .u64 x, .param .u64 y, .param .f32 s, .param .u32 n)
{
	.reg .pred %p;
	.reg .b32 %r<5>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [y];
	ld.param.f32 %f1, [s];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r2, %r2, %r3, %r4;
	setp.ge.u32 %p, %r2, %r1;
	@%p bra DONE;
	mul.wide.u32 %rd3, %r2, 4;
	add.s64 %rd4, %rd1, %rd3;
	add.s64 %rd5, %rd2, %rd3;
	ld.global.f32 %f2, [%rd4];
	mul.f32 %f3, %f2, %f1;
	st.global.f32 [%rd5], %f3;
DONE:
	ret;
}
`

// Raw PTX runs without NVRTC; f32 and i32 scalars reach the kernel.
func TestCustomPTXKernel(t *testing.T) {
	k := frontend.Kernel{Name: "scale", Source: scalePTX, PTX: true,
		Scalars: []frontend.Scalar{frontend.FloatArg(0.5), frontend.IntArg(400)},
		Reference: func(in []*frontend.HostTensor, s []float64) *frontend.HostTensor {
			y := frontend.NewHostTensor(in[0].Type)
			for i, v := range in[0].F {
				y.F[i] = float64(float32(v * s[0]))
			}
			return y
		}}
	res, rep, err := compileCheck(t, mixed(k), 80)
	if err != nil {
		t.Fatal(err)
	}
	requirePass(t, rep)
	if n := strings.Count(string(res.Artifact.PTX), ".version 7.8"); n != 1 {
		t.Errorf("module: %d .version 7.8 lines, want 1 (the higher of 7.8 and the kernel's 7.0)", n)
	}
}

// Each mistake in a custom kernel is one clear error naming the op and the model's line.
func TestCustomErrors(t *testing.T) {
	nvrtc.Require(t)
	ok := swishRef
	for _, tc := range []struct {
		name string
		k    frontend.Kernel
		want string // a regexp
	}{
		{"syntax", frontend.Kernel{Name: "bad", Source: "extern \"C\" __global__ void bad(const float* x, float* y, int n) {\n  y[0] = x[0]\n}\n", Reference: ok},
			`^custom_test.go:\d+: custom op "bad": bad.inline.cu:3: error: expected a ";"$`},
		{"undefined", frontend.Kernel{Name: "bad", Source: "extern \"C\" __global__ void bad(const float* x, float* y, int n) {\n  y[0] = z;\n}\n", Reference: ok},
			`^custom_test.go:\d+: custom op "bad": bad.inline.cu:2: error: identifier "z" is undefined$`},
		{"missing entry", frontend.Kernel{Name: "bad", Entry: "swsh", Source: swishCU, Reference: ok},
			`custom op "bad": missing entry swsh: the source defines swish$`},
		{"mangled", frontend.Kernel{Name: "bad", Source: "__global__ void bad(const float* x, float* y, int n) {}\n", Reference: ok},
			`missing entry bad: the source defines _Z3badPKfPfi \(_Z3badPKfPfi is C\+\+-mangled: declare the kernel extern "C"\)`},
		{"parameter count", frontend.Kernel{Name: "swish", Source: swishCU, Reference: ok, Scalars: []frontend.Scalar{}},
			`custom op "swish": entry swish: takes 3 parameters \(u64, u64, u32\), the op passes 2: operand 0 \(pointer\), the result \(pointer\)$`},
		{"parameter type", frontend.Kernel{Name: "swish", Source: swishCU, Reference: ok, Scalars: []frontend.Scalar{frontend.FloatArg(400)}},
			`entry swish: parameter 2 \(swish_param_2\) is .u32, the op passes scalar 0 \(f32\), which needs .f32 or .b32$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := compileCheck(t, mixed(tc.k), 80)
			if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Errorf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
}

// A reference that panics, or returns the wrong shape, is an error naming the op.
func TestCustomReferenceErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		ref  func([]*frontend.HostTensor, []float64) *frontend.HostTensor
		want string
	}{
		{"panic", func(in []*frontend.HostTensor, _ []float64) *frontend.HostTensor { return in[3] },
			`custom op "scale": the reference function panicked: runtime error: index out of range [3] with length 1`},
		{"shape", func(in []*frontend.HostTensor, _ []float64) *frontend.HostTensor {
			return frontend.NewHostTensor(ir.T(ir.F32, 400))
		}, `custom op "scale": the reference function returned f32[400], want f32[4,100]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := frontend.Kernel{Name: "scale", Source: scalePTX, PTX: true, Reference: tc.ref,
				Scalars: []frontend.Scalar{frontend.FloatArg(0.5), frontend.IntArg(400)}}
			_, _, err := compileCheck(t, mixed(k), 80)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
}

// A user's kernel that writes past its result is caught by the simulator's memcheck, which
// names the kernel and the user's source line.
func TestCustomOutOfBounds(t *testing.T) {
	nvrtc.Require(t)
	src := "extern \"C\" __global__ void swish(const float* x, float* y, int n) {\n" +
		"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n" +
		"  y[i] = x[i] / (1.0f + expf(-x[i]));  // no bound check\n" +
		"}\n"
	_, _, err := compileCheck(t, mixed(frontend.Kernel{Name: "swish", Source: src, Reference: swishRef}), 80)
	if err == nil {
		t.Fatal("no error")
	}
	t.Log(err)
	for _, want := range []string{"k1_custom_swish", "swish.inline.cu:3: memcheck: kernel swish"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nlacks %q", err, want)
		}
	}
}

// An off-by-one store past the model's output is caught by memcheck at the user's line.
func TestCustomOutOfBoundsStore(t *testing.T) {
	nvrtc.Require(t)
	src := "extern \"C\" __global__ void shift(const float* x, float* y, int n) {\n" +
		"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n" +
		"  if (i < n)\n" +
		"    y[i + 1] = x[i];  // off by one\n" +
		"}\n"
	model := func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 100)
		b.Output("y", b.Custom(frontend.Kernel{Name: "shift", Source: src, Scalars: []frontend.Scalar{frontend.IntArg(100)},
			Reference: func(in []*frontend.HostTensor, _ []float64) *frontend.HostTensor { return in[0] }}, x.Exp()))
	}
	_, _, err := compileCheck(t, model, 80)
	if err == nil {
		t.Fatal("no error")
	}
	t.Log(err)
	for _, want := range []string{"k1_custom_shift", "shift.inline.cu:4: memcheck: kernel shift", "st.global"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err lacks %q", want)
		}
	}
}

// A model file with its kernel in a .cu file beside it, loaded as `gcomp check` loads it.
func TestCustomModelFile(t *testing.T) {
	nvrtc.Require(t)
	g, err := load.File(filepath.Join("testdata", "custom", "model.go"), load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inputs, params := values(t, g, 1)
	rep, err := check.Run(res.Artifact, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	requirePass(t, rep)
	// The .gir form carries the kernel, by file name and hash.
	text := g.String()
	if !strings.Contains(text, `file="swish.cu"`) || !strings.Contains(text, "hash=") {
		t.Errorf(".gir lacks the kernel's file or hash:\n%s", text)
	}
}

// NVRTC's error in a .cu file beside the model reaches the user at the model's line.
func TestCustomModelFileCompileError(t *testing.T) {
	nvrtc.Require(t)
	model, err := os.ReadFile(filepath.Join("testdata", "custom", "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := "// Swish with a typo on line 3.\nextern \"C\" __global__ void swish(const float* x, float* y, int n) {\n" +
		"  int i = blockIdx.x * blockDim.x + threadIdx.x\n  if (i < n) y[i] = x[i];\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "model.go"), []byte(strings.Replace(string(model), `"swish.cu"`, `"bad.cu"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.cu"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := load.File(filepath.Join(dir, "model.go"), load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = compiler.Compile(g, compiler.Options{})
	want := `model.go:13: custom op "swish": bad.cu:4: error: expected a ";"`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func requirePass(t *testing.T, rep *check.Report) {
	t.Helper()
	for _, o := range rep.Outputs {
		if !o.Pass() {
			t.Errorf("%s: %d elements outside tolerance; first %s", o.Name, o.Bad, o.First)
		}
	}
}

const swishF64 = `extern "C" __global__ void swish(const double* x, double* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / (1.0 + exp(-x[i]));
}
`

// dswish is swish's backward kernel: its operands are swish's (x) and the gradient of its
// result (dy).
const dswishF64 = `extern "C" __global__ void dswish(const double* x, const double* dy, double* dx, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double s = 1.0 / (1.0 + exp(-x[i]));
    dx[i] = dy[i] * (s + x[i] * s * (1.0 - s));
  }
}
`

func swishF64Ref(in []*frontend.HostTensor, _ []float64) *frontend.HostTensor {
	y := frontend.NewHostTensor(in[0].Type)
	for i, v := range in[0].F {
		y.F[i] = v / (1 + math.Exp(-v))
	}
	return y
}

func dswishF64Ref(in []*frontend.HostTensor, _ []float64) *frontend.HostTensor {
	dx := frontend.NewHostTensor(in[0].Type)
	for i, v := range in[0].F {
		s := 1 / (1 + math.Exp(-v))
		dx.F[i] = in[1].F[i] * (s + v*s*(1-s))
	}
	return dx
}

// A custom op with a backward kernel trains: autodiff applies the backward kernel, whose
// gradient agrees with finite differences of the forward reference, and both kernels run on
// the simulator against their references.
func TestCustomBackward(t *testing.T) {
	nvrtc.Require(t)
	model := func(b *frontend.Builder) {
		x := b.Input("x", frontend.F64, 8, 16)
		w := b.Param("w", frontend.T(frontend.F64, 8, 16), frontend.Uniform(-1, 1))
		n := frontend.IntArg(8 * 16)
		y := b.Custom(frontend.Kernel{Name: "swish", Source: swishF64, Scalars: []frontend.Scalar{n}, Reference: swishF64Ref,
			Backward: []frontend.Kernel{{Name: "dswish", Source: dswishF64, Scalars: []frontend.Scalar{n}, Reference: dswishF64Ref}},
		}, x.Mul(w))
		b.Output("loss", y.Sum())
	}
	g, err := frontend.Build("m", model)
	if err != nil {
		t.Fatal(err)
	}
	gg, err := autodiff.Grad(g, "loss", []string{"w"})
	if err != nil {
		t.Fatal(err)
	}
	inputs, params := values(t, g, 1)
	got, err := ref.Run(gg, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	loss := func(w *tensor.Tensor) float64 {
		p := map[string]*tensor.Tensor{"w": w}
		out, err := ref.Run(g, inputs, p)
		if err != nil {
			t.Fatal(err)
		}
		return out["loss"].F[0]
	}
	const eps = 1e-6
	for _, i := range []int{0, 17, 127} {
		wp, wm := params["w"].Clone(), params["w"].Clone()
		wp.F[i] += eps
		wm.F[i] -= eps
		num := (loss(wp) - loss(wm)) / (2 * eps)
		if an := got["grad.w"].F[i]; math.Abs(an-num) > 1e-6*math.Max(1, math.Abs(num)) {
			t.Errorf("d loss/d w[%d]: backward kernel's reference %.9g, finite differences %.9g", i, an, num)
		}
	}
	res, err := compiler.Compile(gg, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for _, k := range res.Artifact.Plan.Kernels {
		entries = append(entries, k.Entry)
	}
	if !slices.Contains(entries, "dswish") || !slices.Contains(entries, "swish") {
		t.Errorf("entries %v, want swish and dswish", entries)
	}
	rep, err := check.Run(res.Artifact, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	requirePass(t, rep)
}

// A user's kernel that reads a neighbour's shared-memory element without a barrier is caught
// by the simulator's racecheck, which names the kernel and the user's source line of the
// racing access; the same kernel with __syncthreads() passes.
func TestCustomSharedRace(t *testing.T) {
	nvrtc.Require(t)
	for _, tc := range []struct {
		name    string
		barrier string
		want    []string // substrings of the error; nil: the check passes
	}{
		{"missing barrier", "", []string{"k1_custom_prev", "prev.inline.cu:6: racecheck: kernel prev", "shared-memory race", "ld.shared"}},
		{"barrier", "__syncthreads();", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// prev: y[i] = x[i-1] within each block of 128 (0 at a block's start), through
			// shared memory.
			src := "extern \"C\" __global__ void prev(const float* x, float* y, int n) {\n" +
				"  __shared__ float s[128];\n" +
				"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n" +
				"  s[threadIdx.x] = i < n ? x[i] : 0.0f;\n" +
				"  " + tc.barrier + "\n" +
				"  float v = threadIdx.x > 0 ? s[threadIdx.x - 1] : 0.0f;\n" +
				"  if (i < n) y[i] = v;\n" +
				"}\n"
			model := func(b *frontend.Builder) {
				x := b.Input("x", frontend.F32, 256)
				b.Output("y", b.Custom(frontend.Kernel{Name: "prev", Source: src, Block: [3]int{128, 1, 1},
					Scalars: []frontend.Scalar{frontend.IntArg(256)},
					Reference: func(in []*frontend.HostTensor, _ []float64) *frontend.HostTensor {
						y := frontend.NewHostTensor(in[0].Type)
						for i := range y.F {
							if i%128 > 0 {
								y.F[i] = in[0].F[i-1]
							}
						}
						return y
					}}, x.Exp()))
			}
			_, rep, err := compileCheck(t, model, 80)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				requirePass(t, rep)
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err lacks %q", want)
				}
			}
		})
	}
}
