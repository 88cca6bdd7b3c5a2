package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load/internal/linetest"
)

const goodModel = `package toy

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

const layers = 3

// block is a helper defined in the model file.
func block(b *frontend.Builder, name string, x *frontend.Tensor) *frontend.Tensor {
	w := b.Param(name+".weight", ir.T(ir.F32, 4), frontend.Ones())
	return x.Add(w).Relu()
}

func Model(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 2, 4)
	for i := 0; i < layers; i++ {
		x = block(b, "layer"+string(rune('0'+i)), x)
	}
	b.Output("y", x)
}
`

func TestGoModel(t *testing.T) {
	g, err := Source("model.go", []byte(goodModel), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(g.Params()); got != 3 {
		t.Errorf("params = %d, want 3", got)
	}
	if g.Name != "toy" || len(g.Outputs) != 1 || g.Outputs[0].Value.Type.String() != "f32[2,4]" {
		t.Errorf("unexpected graph:\n%s", g)
	}
}

func TestErrors(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(goodModel, old) {
			t.Fatalf("test model lacks %q", old)
		}
		return strings.Replace(goodModel, old, new, 1)
	}
	tests := []struct {
		name, file, src, want string
		entry                 string
	}{
		{name: "syntax", file: "model.go", src: replace("x.Add(w).Relu()", "x.Add(w).Relu("),
			want: "model.go:14:1: expected operand, found '}'"},
		{name: "type error", file: "model.go", src: replace(`x := b.Input("x", ir.F32, 2, 4)`, `x := b.Input(3, ir.F32, 2, 4)`),
			want: "model.go:17:15: "},
		{name: "undefined", file: "model.go", src: replace("x.Add(w).Relu()", "x.Add(w).Frobnicate()"),
			want: "model.go:13:18: x.Add(w).Frobnicate undefined (type *frontend.Tensor has no field or method Frobnicate)"},
		{name: "unused variable", file: "model.go", src: replace(`x := b.Input("x", ir.F32, 2, 4)`, `x := b.Input("x", ir.F32, 2, 4)
	unused := 3`), want: "model.go:18:2: declared and not used: unused"},
		{name: "shape error in helper", file: "model.go", src: replace("ir.T(ir.F32, 4)", "ir.T(ir.F32, 3)"),
			want: "model.go:13: add: shapes cannot be broadcast together"},
		{name: "shape error in model", file: "model.go", src: replace(`b.Output("y", x)`, `b.Output("y", x.Add(b.Input("z", ir.F32, 5)))`),
			want: "model.go:21: add: shapes cannot be broadcast together"},
		{name: "duplicate parameter", file: "model.go", src: replace(`"layer"+string(rune('0'+i))`, `"layer"`),
			want: "model.go:12: "},
		{name: "missing entry", file: "model.go", src: goodModel, entry: "Nope",
			want: "model.go: no function Nope"},
		{name: "bad import", file: "model.go", src: replace(`"github.com/gcomp/gcomp/ir"`, `"github.com/gcomp/gcomp/ir"
	"os"`), want: `model.go:6:2: cannot import "os": a model file may import github.com/gcomp/gcomp/ir, `},
		{name: "panic in init", file: "model.go", src: goodModel + "\nvar boom = []int{}[3]\n",
			want: "model.go:24:12: panic: runtime error: index out of range"},
		{name: "wrong signature", file: "model.go", src: goodModel + "\nfunc Other(x int) {}\n", entry: "Other",
			want: "model.go: Other has type func(int), want func(b *frontend.Builder)"},
		{name: "index out of range", file: "model.go", src: replace(`b.Output("y", x)`, `s := []int{1, 2, 3}
	_ = s[3]`), want: "model.go:22: panic: runtime error: index out of range"},
		{name: "panic in helper", file: "model.go", src: replace("return x.Add(w).Relu()", "return x.Add(w).Relu().Split(1, 2, 2)[2]"),
			want: "model.go:13: panic: runtime error: index out of range"},
		{name: "panic after a call returned", file: "model.go", src: replace(`b.Output("y", x)`, `_ = three()[3]`) + "\nfunc three() []int { return []int{1, 2, 3} }\n",
			want: "model.go:21: panic: runtime error: index out of range"},
		{name: "nil map", file: "model.go", src: replace(`b.Output("y", x)`, `var m map[string]int
	m["x"] = 1`), want: "model.go:22: panic: assignment to entry in nil map"},
		{name: "panic call", file: "model.go", src: replace(`b.Output("y", x)`, `panic("no layers")`),
			want: "model.go:21: panic: no layers"},
		{name: "nil tensor", file: "model.go", src: replace(`b.Output("y", x)`, `var t *frontend.Tensor
	b.Output("y", t.Relu())`), want: "model.go:22: nil tensor"},
		{name: "unbounded recursion", file: "model.go", src: replace(`b.Output("y", x)`, `_ = loop(0)`) + "\nfunc loop(n int) int {\n\treturn loop(n+1)\n}\n",
			want: "model.go:25: calls nested more than 1000 deep (unbounded recursion?)"},
		{name: "no outputs", file: "model.go", src: replace(`b.Output("y", x)`, `_ = x`),
			want: "model.go: graph toy has no outputs"},
		{name: "duplicate in a literal", file: "model.go", src: replace(`b.Output("y", x)`, `ws := []*frontend.Tensor{
		b.Param("p", ir.T(ir.F32, 4), frontend.Ones()),
		b.Param("p",
			ir.T(ir.F32, 4), frontend.Ones()),
	}
	b.Output("y", x.Add(ws[0]))`), want: `model.go:23: duplicate name "p": already declared as parameter at model.go:22`},
		{name: "shape error in a multi-line call", file: "model.go", src: replace(`b.Output("y", x)`, `b.Output("y",
		x.Add(
			b.Input("z", ir.F32, 5)))`), want: "model.go:22: add: shapes cannot be broadcast together"},
		{name: "too large", file: "model.go", src: replace(`b.Output("y", x)`, `b.Output("y", b.Input("big", ir.F32, 100000, 100000))`),
			want: "model.go:21: input %big : f32[100000,100000]: too large: its dimensions multiply to 10000000000, and a tensor holds at most 2147483647 (2^31-1) elements"},
		{name: "overflow in gir", file: "m.gir", src: "graph g {\n  input %x : f32[4611686018427387904,4]\n  output y = %x\n}\n",
			want: "m.gir:2: input %x : f32[4611686018427387904,4]: too large: its dimensions multiply to 18446744073709551616"},
		{name: "no outputs in gir", file: "m.gir", src: "graph g {\n  input %x : f32[2]\n}\n",
			want: "m.gir: graph g has no outputs"},
		{name: "unknown op in gir", file: "m.gir", src: "graph g {\n  input %x : f32[2]\n  %0 = frob(%x) : f32[2]\n  output y = %0\n}\n",
			want: `m.gir:3: %0 = frob(%x) : f32[2]: unknown op "frob"`},
		{name: "wrong type in gir", file: "m.gir", src: "graph g {\n  input %x : f32[2]\n  %0 = neg(%x) : f64[2]\n  output y = %0\n}\n",
			want: `m.gir:3: %0 = neg(%x) : f64[2]: result type is f64[2], but the op computes f32[2]`},
		{name: "gir syntax", file: "m.gir", src: "graph g {\n  input %x f32[2]\n}\n",
			want: `m.gir:2:12: expected ":"`},
		{name: "unknown extension", file: "m.tflite", src: "", want: `m.tflite: unknown model format ".tflite"`},
		{name: "empty onnx", file: "m.onnx", src: "", want: `m.onnx: the model has no graph`},
		{name: "corrupt onnx", file: "m.onnx", src: "\xff\xff", want: `m.onnx: not a valid ONNX model`},
		{name: "range over func", file: "model.go", src: replace(`b.Output("y", x)`, `for i := range seq {
		_ = i
	}
	b.Output("y", x)`) + "\nfunc seq(yield func(int) bool) {\n\tyield(1)\n}\n",
			want: "model.go:21:2: range over a function (an iterator) is not supported in model files"},
		{name: "escape sequence in loc", file: "m.gir", src: "graph g {\n  input %x : f32[2]\n  input %z : f32[3]\n  %0 = add(%x, %z) : f32[2] loc(\"\\u001b[2Jm.go:3\")\n  output y = %0\n}\n",
			want: `\x1b[2Jm.go:3: %0 = add(%x, %z) : f32[2]: add: `},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Source(tc.file, []byte(tc.src), Options{Entry: tc.entry})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error = %v\nwant prefix %q", err, tc.want)
			}
			t.Logf("%v", err)
			if err != nil && strings.Contains(err.Error(), "goroutine ") {
				t.Errorf("error carries a stack trace: %v", err)
			}
		})
	}
}

// TestRangeOverInt checks the rewrite of Go 1.22 integer range loops, which the interpreter lacks,
// in all their forms, and that line numbers survive it.
func TestRangeOverInt(t *testing.T) {
	src := strings.Replace(goodModel, "for i := 0; i < layers; i++ {", `for range 2 {
		x = x.Relu()
	}
	var j int
	for j = range 1 {
		_ = j
	}
	for _ = range layers - layers {
		x = x.Neg()
	}
	for i := range
		layers {`, 1)
	src = strings.Replace(src, `b.Output("y", x)`, `b.Output("y", x.Add(b.Input("z", ir.F32, 5)))`, 1)
	_, err := Source("model.go", []byte(src), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "model.go:32: add: shapes cannot be broadcast") {
		t.Fatalf("error = %v, want it at model.go:32", err)
	}
	src = strings.Replace(src, `x.Add(b.Input("z", ir.F32, 5))`, "x", 1)
	g, err := Source("model.go", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, v := range g.Values {
		count[v.Op]++
	}
	if count["relu"] != 2+3 || count["neg"] != 0 || count["param"] != 3 {
		t.Errorf("loops ran the wrong number of times: %v", count)
	}
}

func TestFile(t *testing.T) {
	if _, err := File(filepath.Join(t.TempDir(), "none.go"), Options{}); err == nil || !strings.HasSuffix(err.Error(), "none.go: no such file") {
		t.Errorf("missing file: %v", err)
	}
	path := filepath.Join(t.TempDir(), "model.go")
	if err := os.WriteFile(path, []byte(goodModel), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := File(path, Options{}); err != nil {
		t.Errorf("File: %v", err)
	}
}

// TestRoutesAgree builds models compiled, with positions from the Go stack, and through the
// interpreter, and wants every value at the same line: the loader's instrumentation gives each
// call into the DSL its own line, as `go build` does, also in statements that span lines.
func TestRoutesAgree(t *testing.T) {
	type route struct {
		path  string
		model func(*frontend.Builder)
	}
	routes := []route{{"internal/linetest/model.go", linetest.Model}}
	for _, ex := range examples.All() {
		routes = append(routes, route{filepath.Join("..", ex.Dir, "model.go"), ex.Model})
	}
	for _, tc := range routes {
		t.Run(tc.path, func(t *testing.T) {
			compiled, err := frontend.Build("m", tc.model)
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := File(tc.path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			lines := func(g *ir.Graph, file string) []string {
				var s []string
				for _, v := range g.Values {
					s = append(s, v.Op+" "+strings.TrimPrefix(v.Pos, file))
				}
				return s
			}
			if diff := cmp.Diff(lines(compiled, "model.go"), lines(loaded, tc.path)); diff != "" {
				t.Errorf("positions differ (-compiled +interpreted):\n%s", diff)
			}
		})
	}
}
