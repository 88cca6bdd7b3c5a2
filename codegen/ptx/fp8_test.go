package ptx

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

var fp8Types = []ir.DType{ir.F8E4M3, ir.F8E5M2}

// nonFP8 is ds without the fp8 dtypes, which need sm_89/sm_90 (TestFP8Casts covers them).
func nonFP8(ds []ir.DType) []ir.DType {
	var out []ir.DType
	for _, d := range ds {
		if !d.IsFP8() {
			out = append(out, d)
		}
	}
	return out
}

// fp8Values are the inputs where fp8 conversions go wrong first: every value of both formats,
// the ties between neighbours and values just off them, values around the largest finites,
// subnormals, ±inf, NaN and a tie that rounding through f32 first would create.
func fp8Values() []float64 {
	var vals []float64
	for _, d := range fp8Types {
		prev := 0.0
		for b := range 0x7F {
			v := tensor.FP8ToFloat(d, uint8(b))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			mid := (prev + v) / 2
			vals = append(vals, v, -v, mid, -mid, mid*(1+0x1p-20), mid*(1-0x1p-20))
			prev = v
		}
	}
	return append(vals, 449, 464, 465, 480, 57344, 61440, 61441, 1e6, -1e9, 3e38, math.Inf(1), math.Inf(-1), math.NaN(),
		1+0x1p-4+0x1p-40, 0x1p-10, 0x1p-17, 1e-30, math.Copysign(0, -1), 1<<40+1, -(1 << 62))
}

// fp8Inputs fills x (of any dtype) with fp8Values as its dtype holds them, then random values.
func fp8Inputs(r *rand.Rand, ty ir.Type) *tensor.Tensor {
	x := random(r, ty, 600)
	for i, v := range fp8Values() {
		if i >= x.Len() {
			break
		}
		if x.F != nil {
			x.F[i] = tensor.RoundFloat(ty.DType, v)
		} else {
			x.I[i] = tensor.WrapInt(ty.DType, int64(max(min(v, 1<<62), -(1<<62))))
		}
	}
	return x
}

// checkFP8Module generates kernels for sm_90 and sm_89, assembles them (sm_90's PTX 7.8 with
// CUDA 11.8's ptxas, sm_89's PTX 8.1 with 12.4's), runs sm_90's in the simulator and compares
// every output with the reference bit for bit.
func checkFP8Module(t *testing.T, kernels []Kernel, inputs []map[string]*tensor.Tensor) {
	t.Helper()
	text, launches, err := Module(kernels, Target{SM: 90})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, ".version 7.8\n.target sm_90\n") {
		t.Errorf("sm_90 module header:\n%s", text[:200])
	}
	assembleInfo(t, text, "sm_90")
	text89, _, err := Module(kernels, Target{SM: 89})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text89, ".version 8.1\n.target sm_89\n") {
		t.Errorf("sm_89 module header:\n%s", text89[:200])
	}
	t.Run("ptxas12", func(t *testing.T) {
		ptxas.Require12(t)
		for _, arch := range []string{"sm_89"} {
			if _, err := ptxas.Assemble([]byte(text89), arch); err != nil {
				t.Fatalf("ptxas 12.4 -arch=%s: %v", arch, err)
			}
		}
		text90, _ := strings.CutPrefix(text, "")
		if _, err := ptxas.Assemble12([]byte(text90), "sm_90"); err != nil {
			t.Fatalf("ptxas 12.4 -arch=sm_90: %v", err)
		}
	})
	for i, k := range kernels {
		in := inputs[i]
		run, err := launchSim(t, text, k.Name, launches[i], k.Graph, in)
		if err != nil {
			t.Fatalf("%s: sim: %v", k.Name, err)
		}
		want, err := ref.Run(k.Graph, pick(k.Graph.Inputs(), in), nil)
		if err != nil {
			t.Fatalf("%s: reference: %v", k.Name, err)
		}
		for _, o := range k.Graph.Outputs {
			compare(t, k.Name+" "+o.Name, run.output(t, o), want[o.Name], true, o.Value.Type.DType, 1, 1)
		}
	}
}

// TestFP8Casts: every cast to and from both fp8 formats, from and to every dtype.
func TestFP8Casts(t *testing.T) {
	var kernels []Kernel
	var inputs []map[string]*tensor.Tensor
	for _, f := range fp8Types {
		for _, d := range ir.DTypes {
			for _, pair := range [][2]ir.DType{{d, f}, {f, d}} {
				if pair[0] == pair[1] || pair[0].IsFP8() && pair[1].IsFP8() && pair[1] == f {
					continue // each fp8 → fp8 pair once
				}
				g := ir.NewGraph("cast_" + pair[0].String() + "_" + pair[1].String())
				x := g.Input("x", ir.T(pair[0], len(fp8Values())+37), nil)
				g.SetOutput("y", g.Add("cast", ir.T(pair[1], x.Type.Shape...), ir.Attrs{"to": pair[1]}, x))
				kernels = append(kernels, Kernel{Name: "k_" + g.Name, Graph: g})
				r := rand.New(rand.NewPCG(uint64(pair[0]), uint64(pair[1])))
				inputs = append(inputs, map[string]*tensor.Tensor{"x": fp8Inputs(r, g.Inputs()[0].Type)})
			}
		}
	}
	checkFP8Module(t, kernels, inputs)
}

// TestFP8Elementwise: fp8 in memory at one byte per element through a fused kernel that widens,
// computes in f16, and narrows: a per-tensor scale (dequantize, then quantize), a transpose, a
// select and a widening of the quantized value in the same kernel, on sizes that are not
// multiples of any vector width.
func TestFP8Elementwise(t *testing.T) {
	var kernels []Kernel
	var inputs []map[string]*tensor.Tensor
	for _, f := range fp8Types {
		for _, shape := range [][]int{{1, 1}, {3, 5}, {67, 130}, {0, 4}} {
			tr := shapeText([]int{shape[1], shape[0]})
			src := `graph q {
  input %x: ` + f.String() + shapeText(shape) + `
  input %s: f16[]
  input %p: bool` + tr + `
  %w = cast(%x) {to=f16}: f16` + shapeText(shape) + `
  %sb = broadcast_in_dim(%s) {shape=` + shapeText(shape) + `, dims=[]}: f16` + shapeText(shape) + `
  %y = mul(%w, %sb): f16` + shapeText(shape) + `
  %q = cast(%y) {to=` + f.String() + `}: ` + f.String() + shapeText(shape) + `
  %t = transpose(%q) {perm=[1,0]}: ` + f.String() + tr + `
  %xt = transpose(%x) {perm=[1,0]}: ` + f.String() + tr + `
  %z = select(%p, %xt, %t): ` + f.String() + tr + `
  %zf = cast(%t) {to=f32}: f32` + tr + `
  output z = %z
  output zf = %zf
}`
			g := parse(t, src)
			name := "k_fp8_" + f.String() + "_" + strings.Trim(shapeText(shape), "[]")
			name = strings.ReplaceAll(name, ",", "x")
			kernels = append(kernels, Kernel{Name: name, Graph: g})
			r := rand.New(rand.NewPCG(uint64(f), uint64(shape[0])))
			x := fp8Inputs(r, g.Inputs()[0].Type)
			p := random(r, g.Inputs()[2].Type, 1)
			inputs = append(inputs, map[string]*tensor.Tensor{"x": x, "s": tensor.FromFloats(ir.T(ir.F16), []float64{1.5}), "p": p})
		}
	}
	checkFP8Module(t, kernels, inputs)
	// One byte per element: the kernels load and store fp8 with ld/st .u8.
	text, _, _ := Module(kernels[:1], Target{SM: 90})
	if !strings.Contains(text, "ld.global.u8") || !strings.Contains(text, "st.global.u8") {
		t.Errorf("fp8 kernel does not move bytes:\n%s", text)
	}
}

func shapeText(s []int) string { return ir.Shape(s).String() }

// TestFP8Targets: sm_80 and sm_86 have no fp8 conversions: one error naming the dtype and target.
func TestFP8Targets(t *testing.T) {
	for _, sm := range []int{80, 86} {
		k := Kernel{Name: "k", Graph: castGraph(ir.F32, ir.F8E4M3)}
		_, _, err := Module([]Kernel{k}, Target{SM: sm})
		if err == nil || !strings.Contains(err.Error(), "f8e4m3 needs sm_89 or sm_90") || !strings.Contains(err.Error(), "sm_"+string(rune('0'+sm/10))+string(rune('0'+sm%10))) {
			t.Errorf("sm_%d: %v", sm, err)
		}
	}
	// Without fp8, sm_89 modules stay at PTX ISA 7.8.
	text, _, err := Module([]Kernel{{Name: "k", Graph: castGraph(ir.F32, ir.F16)}}, Target{SM: 89})
	if err != nil || !strings.Contains(text, ".version 7.8\n") {
		t.Errorf("sm_89 without fp8: %v\n%s", err, text)
	}
}
