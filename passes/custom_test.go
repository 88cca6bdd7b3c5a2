package passes

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// customGraph is y = tanh(custom(exp(x) + 1)) + x with custom elementwise-shaped.
func customGraph(t *testing.T) *ir.Graph {
	t.Helper()
	src := "extern \"C\" __global__ void swish(const float* x, float* y, int n) {}"
	typ := ir.Type{DType: ir.F32, Shape: ir.Shape{8, 16}}
	g := ir.NewGraph("m")
	x := g.Input("x", typ, nil)
	one := g.Add("constant", typ, ir.Attrs{"shape": []int{8, 16}, "dtype": ir.F32, "value": []float64{1}})
	e := g.Add("add", typ, nil, g.Add("exp", typ, nil, x), one)
	c := g.Add(ops.CustomOp, typ, ir.Attrs{"name": "swish", "entry": "swish", "lang": "cuda", "file": "swish.cu", "source": src,
		"hash": ops.SourceHash(src), "dtype": ir.F32, "shape": []int{8, 16}, "grid": []int{1, 1, 1}, "block": []int{128, 1, 1},
		"scalars": []float64{128}, "scalar_types": "i32"}, e)
	y := g.Add("add", typ, nil, g.Add("tanh", typ, nil, c), x)
	g.SetOutput("y", y)
	if err := ops.Verify(g); err != nil {
		t.Fatal(err)
	}
	return g
}

// A custom op is a kernel of its own: its producer and its consumer are fused on either
// side of it, never with it, and its operand and result are buffers in memory.
func TestCustomKernelAlone(t *testing.T) {
	res, err := Run(customGraph(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, k := range res.Kernels.Kernels {
		kinds = append(kinds, k.Kind.String()+":"+opNamesOf(k))
	}
	if len(res.Kernels.Kernels) != 3 {
		t.Fatalf("kernels: %v, want 3", kinds)
	}
	c := res.Kernels.Kernels[1]
	if c.Kind != Custom || len(c.Reads) != 1 || len(c.Writes) != 1 || len(c.Ops) != 1 || c.Ops[0].Op != ops.CustomOp {
		t.Fatalf("middle kernel %v, want the custom op alone", kinds)
	}
	if c.Reads[0].Kind != TempBuffer || c.Writes[0].Kind != TempBuffer {
		t.Errorf("custom kernel reads %s and writes %s, want temps", c.Reads[0].Kind, c.Writes[0].Kind)
	}
	// The memory plan never puts the custom kernel's result over its operand.
	var in, out *PlacedBuffer
	for i := range res.Plan.Buffers {
		switch res.Plan.Buffers[i].Name {
		case c.Reads[0].Name:
			in = &res.Plan.Buffers[i]
		case c.Writes[0].Name:
			out = &res.Plan.Buffers[i]
		}
	}
	if in == nil || out == nil {
		t.Fatalf("plan lacks the custom kernel's buffers: %+v", res.Plan.Buffers)
	}
	if in.Offset < out.Offset+out.Size && out.Offset < in.Offset+in.Size {
		t.Errorf("custom kernel's operand %+v and result %+v overlap", *in, *out)
	}
}

func opNamesOf(k *Kernel) string {
	var s []string
	for _, v := range k.Ops {
		s = append(s, v.Op)
	}
	return strings.Join(s, " ")
}

func TestCustomKernelNames(t *testing.T) {
	res, err := Run(customGraph(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range res.Kernels.Kernels {
		names = append(names, k.Name)
	}
	if len(names) != 3 || names[1] != "k1_custom_swish" {
		t.Errorf("kernel names %v", names)
	}
}

// A constant operand of a custom op is stored by a kernel of its own: the custom kernel reads
// every operand from memory (found when a backward kernel's dy was the splat 1 of a sum).
func TestCustomConstantOperand(t *testing.T) {
	src := "k"
	typ := ir.Type{DType: ir.F32, Shape: ir.Shape{4}}
	g := ir.NewGraph("m")
	one := g.Add("constant", typ, ir.Attrs{"shape": []int{4}, "dtype": ir.F32, "value": []float64{1}})
	c := g.Add(ops.CustomOp, typ, ir.Attrs{"name": "k", "entry": "k", "lang": "ptx", "file": "k.ptx", "source": src,
		"hash": ops.SourceHash(src), "dtype": ir.F32, "shape": []int{4}, "grid": []int{1, 1, 1}, "block": []int{4, 1, 1}}, one)
	g.SetOutput("y", c)
	res, err := Run(g, Options{VerifyEach: true})
	if err != nil {
		t.Fatal(err)
	}
	ks := res.Kernels.Kernels
	if len(ks) != 2 || ks[1].Kind != Custom || len(ks[1].Reads) != 1 || ks[1].Body.Values[0].Op != ir.OpInput {
		t.Fatalf("kernels:\n%s", res.Kernels)
	}
}
