package ptx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// Every elementwise op on every dtype it accepts, over edge cases (NaN, ±inf, ±0, subnormals,
// large values, integer extremes) and random values, at a size with both the vector path and the
// scalar tail.
var (
	unaryOps  = []string{"abs", "neg", "not", "relu", "sqrt", "rsqrt", "floor", "ceil", "exp", "log", "sigmoid", "tanh", "erf", "sin", "cos"}
	binaryOps = []string{"add", "sub", "mul", "div", "max", "min", "and", "or", "eq", "ne", "lt", "le", "gt", "ge", "pow"}
	// approximate lists the ops whose results are held to the tolerance instead of bit-exactness.
	approximate = map[string]bool{"exp": true, "log": true, "sigmoid": true, "tanh": true, "erf": true, "sin": true, "cos": true, "pow": true}
)

func edgeValues(d ir.DType) []float64 {
	switch {
	case d.IsFloat():
		v := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2.5, -2.5, 3,
			1e-30, -1e-40, 1e-45, 3e38, -3e38, 88.7, -87.5, 100, -104, 1e5, -1e5, 0.1, 7.9, 2.4999, 6.5}
		for i := range v {
			v[i] = tensor.RoundFloat(d, v[i])
		}
		return v
	case d == ir.Bool:
		return []float64{0, 1, 1, 0}
	}
	lo, hi := intLimits(d)
	return []float64{0, 1, -1, lo, hi, 2, -2, 7, -7, lo + 1, hi - 1, 0, 3, -1, 1}
}

// edgeTensor fills a tensor with the edge values (cycled with an offset, so binary ops see every
// pair shape) followed by random values.
func edgeTensor(r *rand.Rand, ty ir.Type, shift int) *tensor.Tensor {
	x := random(r, ty, 4)
	edges := edgeValues(ty.DType)
	n := min(x.Len(), 3*len(edges))
	for i := range n {
		e := edges[(i+shift*(i/len(edges)+1))%len(edges)]
		if ty.DType.IsFloat() {
			x.F[i] = e
		} else {
			x.I[i] = tensor.WrapInt(ty.DType, int64(e))
		}
	}
	return x
}

func elementwiseGraph(op string, d ir.DType, arity int, shape ...int) (*ir.Graph, error) {
	g := ir.NewGraph(op)
	ty := ir.T(d, shape...)
	var args []*ir.Value
	for i := range arity {
		args = append(args, g.Input(fmt.Sprintf("x%d", i), ty, nil))
	}
	types := make([]ir.Type, arity)
	for i := range types {
		types[i] = ty
	}
	out, err := ops.Infer(op, types, nil)
	if err != nil {
		return nil, err
	}
	g.SetOutput("y", g.Add(op, out, nil, args...))
	return g, nil
}

func TestElementwiseOps(t *testing.T) {
	type tc struct {
		op string
		d  ir.DType
		g  *ir.Graph
	}
	var cases []tc
	var kernels []Kernel
	for _, d := range ir.DTypes {
		for arity, list := range [][]string{1: unaryOps, 2: binaryOps} {
			for _, op := range list {
				g, err := elementwiseGraph(op, d, arity, 7, 13)
				if err != nil {
					continue // the op does not take this dtype
				}
				cases = append(cases, tc{op, d, g})
				kernels = append(kernels, Kernel{Name: "k_" + op, Graph: g})
			}
		}
	}
	assembleBatchRenamed(t, kernels)
	for _, c := range cases {
		op, d, g := c.op, c.d, c.g
		{
			{
				t.Run(op+"_"+d.String(), func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(d), uint64(len(op))))
					in := map[string]*tensor.Tensor{}
					for i, v := range g.Inputs() {
						in[v.Name] = edgeTensor(r, v.Type, 7*i)
					}
					if op == "sin" || op == "cos" {
						checkSinCos(t, Kernel{Name: "k_" + op, Graph: g}, in)
						return
					}
					checkKernel(t, Kernel{Name: "k_" + op, Graph: g}, in, !approximate[op])
				})
			}
		}
	}
}

func castGraph(from, to ir.DType) *ir.Graph {
	g := ir.NewGraph("cast")
	x := g.Input("x", ir.T(from, 5, 9), nil)
	g.SetOutput("y", g.Add("cast", ir.T(to, 5, 9), ir.Attrs{"to": to}, x))
	return g
}

func TestCasts(t *testing.T) {
	var kernels []Kernel
	for _, from := range nonFP8(ir.DTypes) {
		for _, to := range nonFP8(ir.DTypes) {
			kernels = append(kernels, Kernel{Name: "k_cast", Graph: castGraph(from, to)})
		}
	}
	assembleBatchRenamed(t, kernels)
	for _, from := range nonFP8(ir.DTypes) {
		for _, to := range nonFP8(ir.DTypes) {
			t.Run(from.String()+"_to_"+to.String(), func(t *testing.T) {
				g := castGraph(from, to)
				x := g.Inputs()[0]
				r := rand.New(rand.NewPCG(uint64(from), uint64(to)))
				in := map[string]*tensor.Tensor{"x": edgeTensor(r, x.Type, 0)}
				if from.IsFloat() {
					// values near the integer types' limits and halfway cases for the roundings
					for i, f := range []float64{127.5, 128, -128.5, -129, 255.5, 256, 2147483520, 2147483648, -2147483904,
						9.3e18, -9.3e18, 65520, 65519, 0.1, 1.0000001, 3.3895313892515355e38, 1 + 0x1p-11 + 0x1p-30} {
						in["x"].F[i] = tensor.RoundFloat(from, f)
					}
				}
				if from == ir.I64 {
					for i, n := range []int64{1<<53 + 1, 1<<62 + 1<<38 + 1, -(1<<62 + 1<<38 + 1), 1<<24 + 1, 65521} {
						in["x"].I[i] = n
					}
				}
				checkKernel(t, Kernel{Name: "k_cast", Graph: g}, in, true)
			})
		}
	}
}

// checkSinCos: f64 arguments beyond the Cody–Waite reduction's range give NaN by design
// (docs/codegen.md); everything else (f32, f16, bf16 of any size) is held to the tolerance.
func checkSinCos(t *testing.T, k Kernel, in map[string]*tensor.Tensor) {
	res := runKernel(t, k, in)
	want, err := ref.Run(k.Graph, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, got, w := in["x0"], res.out["y"], want["y"]
	for i := range x.Len() {
		if x.Type.DType == ir.F64 && math.Abs(x.F[i]) >= sinCosLimit {
			if !math.IsNaN(got.F[i]) {
				t.Errorf("x=%v: got %v, want NaN beyond the reduction's range", x.F[i], got.F[i])
			}
			continue
		}
		if msg := mismatch(x.Type.DType, got.F[i], w.F[i], false); msg != "" {
			t.Errorf("x=%v: %s", x.F[i], msg)
		}
	}
}
