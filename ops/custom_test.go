package ops

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

func testAttrs(name, src string) ir.Attrs {
	return ir.Attrs{"name": name, "entry": "k", "lang": "cuda", "file": "k.cu", "source": src, "hash": SourceHash(src),
		"dtype": ir.F32, "shape": []int{2, 3}, "grid": []int{1, 1, 1}, "block": []int{6, 1, 1},
		"scalars": []float64{6}, "scalar_types": "i32"}
}

func setSource(a ir.Attrs, src string) { a["source"], a["hash"] = src, SourceHash(src) }

func TestCustomInfer(t *testing.T) {
	f32 := ir.Type{DType: ir.F32, Shape: ir.Shape{2, 3}}
	for _, tc := range []struct {
		name string
		edit func(ir.Attrs)
		want string
	}{
		{"ok", func(ir.Attrs) {}, "f32[2,3]"},
		{"hash", func(a ir.Attrs) { a["hash"] = "00" }, `custom: "t": hash 00 is not the source's`},
		{"lang", func(a ir.Attrs) { a["lang"] = "c" }, `lang "c" is not cuda or ptx`},
		{"grid", func(a ir.Attrs) { a["grid"] = []int{0, 1, 1} }, "grid [0 1 1] is not 3 positive ints"},
		{"block", func(a ir.Attrs) { a["block"] = []int{64, 32, 1} }, "more than 1024 threads"},
		{"scalar type", func(a ir.Attrs) { a["scalar_types"] = "u8" }, `scalar type "u8" is not one of`},
		{"scalar count", func(a ir.Attrs) { a["scalar_types"] = "i32 f32" }, "1 scalars for 2 scalar_types"},
		{"entry", func(a ir.Attrs) { a["entry"] = "" }, "empty entry"},
		{"negative block", func(a ir.Attrs) { a["block"] = []int{-256, 1, 1} }, "block [-256 1 1] is not 3 positive ints"},
		{"include", func(a ir.Attrs) { setSource(a, "// k\n#include \"/etc/passwd\"\n") }, `its source line 2 reads a file (#include "/etc/passwd")`},
		{"include in ptx", func(a ir.Attrs) { a["lang"] = "ptx"; setSource(a, "#include \"x\"\n") }, "f32[2,3]"},
		{"commented include", func(a ir.Attrs) { setSource(a, "/* #include \"x\"\n#include \"y\" */\n// #include \"z\"\n") }, "f32[2,3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := testAttrs("t", "src")
			tc.edit(a)
			got, err := Infer(CustomOp, []ir.Type{f32}, a)
			s := got.String()
			if err != nil {
				s = err.Error()
			}
			if !strings.Contains(s, tc.want) {
				t.Errorf("got %q, want %q", s, tc.want)
			}
		})
	}
}

func TestCustomEval(t *testing.T) {
	typ := ir.Type{DType: ir.F32, Shape: ir.Shape{2, 3}}
	x := tensor.New(typ)
	for i := range x.F {
		x.F[i] = float64(i)
	}
	double := func(in []*tensor.Tensor, s []float64) *tensor.Tensor {
		y := tensor.New(in[0].Type)
		for i, v := range in[0].F {
			y.F[i] = 2 * v
		}
		in[0].F[0] = 99 // must not leak into the interpreter's values
		return y
	}
	RegisterReference("double", SourceHash("double"), double)
	RegisterReference("boom", SourceHash("boom"), func([]*tensor.Tensor, []float64) *tensor.Tensor { panic("index out of range") })
	RegisterReference("flat", SourceHash("flat"), func([]*tensor.Tensor, []float64) *tensor.Tensor {
		return tensor.New(ir.Type{DType: ir.F32, Shape: ir.Shape{6}})
	})
	for _, tc := range []struct{ name, want string }{
		{"double", ""},
		{"boom", `custom op "boom": the reference function panicked: index out of range`},
		{"flat", `custom op "flat": the reference function returned f32[6], want f32[2,3]`},
		{"missing", `custom op "missing" has no Go reference function`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &ir.Value{Op: CustomOp, Attrs: testAttrs(tc.name, tc.name), Type: typ}
			y, err := Eval(v, []*tensor.Tensor{x})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if y.F[5] != 10 || x.F[0] != 0 {
					t.Errorf("y = %v, x = %v", y.F, x.F)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A custom op's source travels through the .gir text form exactly, escapes and all.
func TestCustomTextRoundTrip(t *testing.T) {
	src := "extern \"C\" __global__ void k(const float* x, float* y, int n) {\n\tint i = threadIdx.x; // \"quoted\" \\ \n\tif (i < n) y[i] = 2*x[i];\n}\n"
	g := ir.NewGraph("m")
	x := g.Input("x", ir.Type{DType: ir.F32, Shape: ir.Shape{2, 3}}, nil)
	y := g.Add(CustomOp, ir.Type{DType: ir.F32, Shape: ir.Shape{2, 3}}, testAttrs("k", src), x)
	g.SetOutput("y", y)
	if err := Verify(g); err != nil {
		t.Fatal(err)
	}
	text := g.String()
	h, err := ir.Parse("m.gir", []byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if err := Verify(h); err != nil {
		t.Fatal(err)
	}
	if got := h.Values[1].Attrs.String("source", ""); got != src {
		t.Errorf("source after the round trip:\n%q\nwant\n%q", got, src)
	}
	if h.String() != text {
		t.Errorf("printing again differs:\n%s\n%s", h.String(), text)
	}
}
