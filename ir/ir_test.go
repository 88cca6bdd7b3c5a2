package ir

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sample = `graph linreg {
  input %x : f32[8,2]
  input %tokens : i64[1,4] {range=[0,512]}
  param %linear.weight : f32[5,2] {high=0.7071067811865476, init="uniform", low=-0.7071067811865476}
  param %0.bias : f32[5] {init="zeros"}
  %0 = dot_general(%x, %linear.weight) {lhs_contract=[1], rhs_contract=[1]} : f32[8,5] loc("model.go:12")
  %1 = constant() {dtype=f32, shape=[], value=[-0.0]} : f32[]
  %2 = constant() {dtype=f64, shape=[3], value=[inf,-inf,1e-300]} : f64[3]
  %scaled = mul(%0, %0) {note="a \"quoted\" string", on=true} : f32[8,5]
  output y = %scaled
  output z = %2
}
`

func TestRoundTrip(t *testing.T) {
	g, err := Parse("sample.gir", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sample, g.String()); diff != "" {
		t.Errorf("print(parse(text)) differs (-want +got):\n%s", diff)
	}
	g2, err := Parse("again.gir", []byte(g.String()))
	if err != nil {
		t.Fatal(err)
	}
	if g2.String() != g.String() {
		t.Errorf("print∘parse is not a fixpoint")
	}
	if err := Verify(g, nil); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if got := g.Values[5].Attrs.Floats("value"); !math.Signbit(got[0]) {
		t.Errorf("-0.0 lost its sign: %v", got)
	}
	if got := g.Lookup("linear.weight"); got == nil || got.Type.String() != "f32[5,2]" {
		t.Errorf("Lookup(linear.weight) = %v", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"empty", ``, `t.gir:1:1: expected "graph", found end of file`},
		{"no brace", `graph g`, `t.gir:1:8: expected "{", found end of file`},
		{"bad dtype", "graph g {\n  input %x : f33[2]\n}", `t.gir:2:14: unknown dtype "f33"`},
		{"undefined", "graph g {\n  %0 = neg(%y) : f32[2]\n}", `t.gir:2:12: undefined value %y`},
		{"twice", "graph g {\n  input %x : f32[2]\n  input %x : f32[2]\n}", `t.gir:3:9: value %x defined twice`},
		{"numbered input", "graph g {\n  input %3 : f32[2]\n}", `t.gir:2:9: input %3 needs a name, not a number`},
		{"bad dim", "graph g {\n  input %x : f32[-2]\n}", `t.gir:2:18: bad dimension "-2"`},
		{"bad attr", "graph g {\n  input %x : f32[2] {a=%x}\n}", `t.gir:2:24: bad attribute value "%x"`},
		{"dup attr", "graph g {\n  input %x : f32[2] {a=1, a=2}\n}", `t.gir:2:27: attribute a given twice`},
		{"trailing", "graph g {\n}\nx", `t.gir:3:1: unexpected "x" after the graph`},
		{"stray char", "graph g {\n  $\n}", `t.gir:2:3: unexpected character '$'`},
		{"string", "graph g {\n  input %x : f32[2] {a=\"oops}\n}", `t.gir:2:24: unterminated string`},
		{"dup output", "graph g {\n  input %x : f32[2]\n  output y = %x\n  output y = %x\n}", `t.gir:4:10: output y declared twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.gir", []byte(tc.src))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Parse error = %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	build := func(f func(g *Graph)) *Graph {
		g := NewGraph("g")
		f(g)
		return g
	}
	tests := []struct {
		name string
		g    *Graph
		want string
	}{
		{"no outputs", build(func(g *Graph) { g.Input("x", T(F32, 2), nil) }), "graph g has no outputs"},
		{"unnamed input", build(func(g *Graph) { x := g.Input("", T(F32, 2), nil); g.SetOutput("y", x) }), "input %0 : f32[2]: input needs a name"},
		{"bad dtype", build(func(g *Graph) { x := g.Input("x", T(Invalid, 2), nil); g.SetOutput("y", x) }), "invalid dtype"},
		{"negative dim", build(func(g *Graph) { x := g.Input("x", T(F32, -1), nil); g.SetOutput("y", x) }), "negative dimension in f32[-1]"},
		{"dangling", build(func(g *Graph) {
			other := NewGraph("o").Input("z", T(F32, 2), nil)
			y := g.Add("neg", T(F32, 2), nil, other)
			g.SetOutput("y", y)
		}), "%0 = neg(%<undefined>) : f32[2]: operand 0 is not defined before its use"},
		{"cycle", build(func(g *Graph) {
			x := g.Input("x", T(F32, 2), nil)
			a := g.Add("add", T(F32, 2), nil, x, x)
			b := g.Add("neg", T(F32, 2), nil, a)
			a.Args[1] = b
			g.SetOutput("y", b)
		}), "%0 = add(%x, %1) : f32[2]: operand 1 is not defined before its use"},
		{"duplicate name", build(func(g *Graph) {
			g.Input("x", T(F32, 2), nil)
			x := g.Param("x", T(F32, 2), nil)
			g.SetOutput("y", x)
		}), `name "x" is used twice`},
		{"bad attr type", build(func(g *Graph) {
			x := g.Input("x", T(F32, 2), Attrs{"k": int64(3)})
			g.SetOutput("y", x)
		}), "attribute k has unsupported Go type int64"},
		{"position", build(func(g *Graph) {
			x := g.Input("x", T(F32, 2), nil)
			y := g.Add("neg", T(F32, 2), nil, x)
			y.Pos = "model.go:7"
			y.Args = append(y.Args, nil)
			g.SetOutput("y", y)
		}), "model.go:7: %0 = neg(%x, %<undefined>) : f32[2]: operand 1 is nil"},
		{"no outputs in a file", build(func(g *Graph) { g.File = "m.gir"; g.Input("x", T(F32, 2), nil) }), "m.gir: graph g has no outputs"},
		{"too many elements", build(func(g *Graph) { g.SetOutput("y", g.Input("x", T(F32, 100000, 100000), nil)) }),
			"input %x : f32[100000,100000]: too large: its dimensions multiply to 10000000000, and a tensor holds at most 2147483647 (2^31-1) elements"},
		{"element count overflows", build(func(g *Graph) { g.SetOutput("y", g.Input("x", T(F32, 1<<62, 4), nil)) }),
			"its dimensions multiply to 18446744073709551616,"},
		{"byte count overflows", build(func(g *Graph) { g.SetOutput("y", g.Input("x", T(F64, 1<<61), nil)) }),
			"its dimensions multiply to 2305843009213693952,"},
		{"strides overflow past a zero dim", build(func(g *Graph) { g.SetOutput("y", g.Input("x", T(F32, 0, 1<<40, 1<<40), nil)) }),
			"its dimensions multiply to 1208925819614629174706176,"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.g, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestCheckerMessageNamesNode(t *testing.T) {
	g, err := Parse("m.gir", []byte("graph g {\n  input %x : f32[2]\n  %0 = neg(%x) : f32[3]\n  output y = %0\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = Verify(g, func(g *Graph, v *Value) error {
		if v.Op == "neg" && !v.Type.Equal(v.Args[0].Type) {
			return errString("result type differs")
		}
		return nil
	})
	want := "m.gir:3: %0 = neg(%x) : f32[3]: result type differs"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestDOT(t *testing.T) {
	g, err := Parse("s.gir", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	dot := g.DOT()
	for _, want := range []string{`digraph "linreg" {`, `shape=note, label="linear.weight\nf32[5,2]"`, `v0 -> v4 [label="0"];`, `out0 [shape=doubleoctagon, label="y"]`} {
		if !strings.Contains(dot, want) {
			t.Errorf("DOT output lacks %q:\n%s", want, dot)
		}
	}
}

func TestTypes(t *testing.T) {
	for _, d := range DTypes {
		got, ok := ParseDType(d.String())
		if !ok || got != d {
			t.Errorf("ParseDType(%q) = %v, %v", d.String(), got, ok)
		}
	}
	ty, err := ParseType("bf16[2,3,4]")
	if err != nil || ty.String() != "bf16[2,3,4]" || ty.Bytes() != 48 {
		t.Errorf("ParseType: %v %v", ty, err)
	}
	if got := ty.Shape.Strides(); !cmp.Equal(got, []int{12, 4, 1}) {
		t.Errorf("Strides = %v", got)
	}
	for _, bad := range []string{"f32", "x[2]", "f32[a]", "f32[-1]"} {
		if _, err := ParseType(bad); err == nil {
			t.Errorf("ParseType(%q) succeeded", bad)
		}
	}
}

func TestClone(t *testing.T) {
	g, err := Parse("s.gir", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	c := g.Clone()
	c.Values[4].Attrs["lhs_contract"].([]int)[0] = 7
	c.Values[0].Type.Shape[0] = 99
	if g.String() != sample {
		t.Errorf("mutating the clone changed the original:\n%s", g.String())
	}
	if err := Verify(c, nil); err != nil {
		t.Error(err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("graph g {\n  input %x : f32[2]\n  output y = %x\n}\n")
	f.Add("graph g { %0 = c() {a=[1,2.5,nan], b=-inf, c=\"s\"} : bool[] }")
	f.Add(symSample)
	f.Add("graph g {\n  dims { n in [0,9], m in [2,3] }\n  input %x : f32[n*m-1,(n+1)/2,n%2]\n  output y = %x\n}\n")
	f.Fuzz(func(t *testing.T, src string) {
		g, err := Parse("f.gir", []byte(src))
		if err != nil {
			return
		}
		// Whatever parses must print and parse back to the same text.
		text := g.String()
		g2, err := Parse("f2.gir", []byte(text))
		if err != nil {
			t.Fatalf("reparse of printed graph failed: %v\n%s", err, text)
		}
		if g2.String() != text {
			t.Fatalf("print is not a fixpoint:\n%s\n---\n%s", text, g2.String())
		}
	})
}

// An input's range=[lo,hi] is a non-empty set of its dtype's values (lo <= v < hi), or the graph
// is refused; the limits themselves are accepted.
func TestVerifyRange(t *testing.T) {
	tests := []struct {
		dt   DType
		r    any
		want string // "" when valid
	}{
		{I8, []int{-128, 128}, ""},
		{U8, []int{0, 256}, ""},
		{I32, []int{-1 << 31, 1 << 31}, ""},
		{I64, []int{-1 << 62, 1 << 62}, ""},
		{I64, []int{math.MinInt64, math.MaxInt64}, ""},
		{I8, []int{-200, 5}, "range=[-200, 5] is outside i8's values [-128, 127]"},
		{I8, []int{0, 129}, "range=[0, 129] is outside i8's values [-128, 127]"},
		{U8, []int{-1, 3}, "is outside u8's values [0, 255]"},
		{U8, []int{0, 257}, "is outside u8's values [0, 255]"},
		{I32, []int{0, 1<<31 + 1}, "is outside i32's values"},
		{I32, []int{5, 5}, "range=[5, 5] is empty"},
		{I32, []int{3, 2}, "range=[3, 2] is empty"},
		{I32, []int{3}, "range must be a list of two integers"},
		{I32, []float64{0, 2}, "range must be a list of two integers"},
		{F32, []int{0, 2}, "range is for integer inputs, not f32"},
	}
	for _, tc := range tests {
		g := NewGraph("g")
		g.File = "m.gir"
		x := g.Input("x", T(tc.dt, 2), Attrs{"range": tc.r})
		x.Pos = "m.gir:2"
		g.SetOutput("y", x)
		err := Verify(g, nil)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "m.gir:2: ")) {
			t.Errorf("%s range=%v: Verify = %v, want %q at m.gir:2", tc.dt, tc.r, err, tc.want)
		}
	}
}

// The element limit is inclusive: 2^31-1 elements are accepted, 2^31 refused. A value built
// through the API with an all-digit name would print as an unnamed %17 and not read back.
func TestVerifyBoundaries(t *testing.T) {
	g := NewGraph("g")
	g.SetOutput("y", g.Input("x", T(F32, MaxElements), nil))
	if err := Verify(g, nil); err != nil {
		t.Errorf("%d elements: %v", MaxElements, err)
	}
	g = NewGraph("g")
	g.SetOutput("y", g.Input("x", T(F32, MaxElements+1), nil))
	if err := Verify(g, nil); err == nil {
		t.Errorf("%d elements accepted", MaxElements+1)
	}
	g = NewGraph("g")
	x := g.Input("x", T(F32, 2), nil)
	g.SetOutput("y", g.Add("neg", T(F32, 2), nil, x))
	g.Values[1].Name = "17"
	if err := Verify(g, nil); err == nil || !strings.Contains(err.Error(), `bad value name "17"`) {
		t.Errorf("a value named 17: Verify = %v", err)
	}
}

// The element limits (ir.md): inputs, parameters and outputs are in memory, so they hold at most
// MaxElements; a value between two ops may have up to MaxValueElements (attention's scores before
// the attention pass replaces them), each dimension at most MaxElements. The reductions below
// make the large values intermediates: Verify checks shapes, not op semantics (check is nil).
func TestVerifyElementLimits(t *testing.T) {
	big := T(F32, 4, 65536, 8192) // 2^31 elements: TinyLlama's grouped scores at T = 8192
	tests := []struct {
		name  string
		build func(g *Graph)
		want  string // "" when the graph verifies
	}{
		{"intermediate of 2^31", func(g *Graph) {
			g.SetOutput("y", g.Add("reduce_sum", T(F32), nil, g.Add("broadcast", big, nil, g.Input("x", T(F32), nil))))
		}, ""},
		{"intermediate of 2^48", func(g *Graph) {
			g.SetOutput("y", g.Add("reduce_sum", T(F32), nil, g.Add("broadcast", T(F32, 1<<24, 1<<24), nil, g.Input("x", T(F32), nil))))
		}, ""},
		{"intermediate over 2^48", func(g *Graph) {
			g.SetOutput("y", g.Add("reduce_sum", T(F32), nil, g.Add("broadcast", T(F32, 1<<24, 1<<24, 2), nil, g.Input("x", T(F32), nil))))
		}, "%0 = broadcast(%x) : f32[16777216,16777216,2]: too large: its dimensions multiply to 562949953421312, and a value has at most 281474976710656 (2^48) elements"},
		{"intermediate whose count wraps int64", func(g *Graph) {
			g.SetOutput("y", g.Add("reduce_sum", T(F32), nil, g.Add("broadcast", T(F32, 1<<24, 1<<24, MaxElements), nil, g.Input("x", T(F32), nil))))
		}, "its dimensions multiply to 604462909525839610642432,"},
		{"intermediate dimension over 2^31-1", func(g *Graph) {
			g.SetOutput("y", g.Add("reduce_sum", T(F32), nil, g.Add("broadcast", T(F32, 1, MaxElements+1), nil, g.Input("x", T(F32), nil))))
		}, "%0 = broadcast(%x) : f32[1,2147483648]: too large: dimension 1 is 2147483648, and a dimension holds at most 2147483647 (2^31-1)"},
		{"input of 2^31-1", func(g *Graph) { g.SetOutput("y", g.Input("x", T(F32, MaxElements), nil)) }, ""},
		{"input of 2^31", func(g *Graph) { g.SetOutput("y", g.Input("x", big, nil)) },
			"input %x : f32[4,65536,8192]: too large: its dimensions multiply to 2147483648, and a tensor holds at most 2147483647 (2^31-1) elements in memory, where an input always is"},
		{"parameter of 2^31", func(g *Graph) { g.SetOutput("y", g.Param("w", big, nil)) }, "where a parameter always is"},
		{"output of 2^31", func(g *Graph) { g.SetOutput("y", g.Add("broadcast", big, nil, g.Input("x", T(F32), nil))) },
			"%0 = broadcast(%x) : f32[4,65536,8192]: too large: its dimensions multiply to 2147483648, and a tensor holds at most 2147483647 (2^31-1) elements in memory, where an output always is"},
		{"zero dims count as 1", func(g *Graph) {
			g.SetOutput("y", g.Add("reduce_sum", T(F32), nil, g.Add("broadcast", T(F32, 0, 4, 65536, 8192), nil, g.Input("x", T(F32), nil))))
		}, ""},
		{"zero-size output of 2^31 strides", func(g *Graph) { g.SetOutput("y", g.Input("x", T(F32, 0, 4, 65536, 8192), nil)) }, "multiply to 2147483648,"},
	}
	for _, tc := range tests {
		g := NewGraph("g")
		tc.build(g)
		err := Verify(g, nil)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Verify = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Oversize is the limit of a tensor in memory, whatever the value is: 2^31-1 elements.
func TestOversize(t *testing.T) {
	for _, tc := range []struct {
		s    Shape
		want string
	}{
		{Shape{}, ""},
		{Shape{MaxElements}, ""},
		{Shape{0, MaxElements}, ""},
		{Shape{MaxElements + 1}, "its dimensions multiply to 2147483648, and a tensor holds at most 2147483647 (2^31-1) elements in memory"},
		{Shape{1 << 16, 1 << 16, 1 << 16}, "multiply to 281474976710656,"},
	} {
		if got := Oversize(tc.s); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("Oversize(%v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// Hand-written numbers: an exponent may be written E, and a list with any float in it is a
// float list (ir.md), whatever the order of its elements.
func TestParseNumbers(t *testing.T) {
	src := "graph g {\n  input %x : f32[2] {eps=1E-5, a=[1.5, 2], b=[2, 1.5], c=[1, 2], d=2.5e+3}\n  output y = %x\n}"
	g, err := Parse("t.gir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a := g.Values[0].Attrs
	if got := a["eps"]; got != 1e-5 {
		t.Errorf("eps = %#v, want 1e-5", got)
	}
	for _, k := range []string{"a", "b"} {
		if got, ok := a[k].([]float64); !ok || len(got) != 2 {
			t.Errorf("%s = %#v, want a float list", k, a[k])
		}
	}
	if got, ok := a["c"].([]int); !ok || got[0] != 1 || got[1] != 2 {
		t.Errorf("c = %#v, want [1 2] as ints", a["c"])
	}
	if got := a["d"]; got != 2500.0 {
		t.Errorf("d = %#v, want 2500.0", got)
	}
}
