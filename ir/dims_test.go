package ir

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir/sym"
	"github.com/google/go-cmp/cmp"
)

const symSample = `graph attn {
  dims { batch in [1,64], seq in [1,2048] }
  input %x : f32[batch,seq,768]
  input %half : f32[(seq+1)/2]
  input %flat : f32[768*batch*seq]
  %0 = reshape(%x) {shape=[131072,768]} : f32[batch*seq,768]
  %1 = neg(%half) : f32[(seq+1)/2]
  %2 = neg(%flat) : f32[768*batch*seq]
  output y = %0
  output z = %1
  output w = %2
}
`

func TestSymRoundTrip(t *testing.T) {
	g, err := Parse("s.gir", []byte(symSample))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(symSample, g.String()); diff != "" {
		t.Errorf("print(parse(text)) differs (-want +got):\n%s", diff)
	}
	if err := Verify(g, nil); err != nil {
		t.Fatal(err)
	}
	want := []Dim{{"batch", 1, 64}, {"seq", 1, 2048}}
	if diff := cmp.Diff(want, g.Dims); diff != "" {
		t.Errorf("dims (-want +got):\n%s", diff)
	}
	x := g.Lookup("x").Type
	if !x.Shape.Equal(Shape{64, 2048, 768}) || len(x.Sym) != 3 || !x.Sym[1].Equal(sym.Sym("seq")) {
		t.Errorf("x : %s has shape %v", x, x.Shape)
	}
	if got := g.Lookup("half").Type.Shape; !got.Equal(Shape{1024}) {
		t.Errorf("half's bound = %v, want [1024]", got)
	}
	// Spellings of one expression print canonically; constant expressions are static.
	alt := strings.NewReplacer("[batch,seq,768]", "[ batch , seq, 768 ]", "(seq+1)/2]", "(2*seq+2) / 4]",
		"768*batch*seq]", "seq*(batch*768)]").Replace(symSample)
	g2, err := Parse("s.gir", []byte(alt))
	if err != nil {
		t.Fatal(err)
	}
	if g2.String() != symSample {
		t.Errorf("respelled graph prints as\n%s", g2)
	}
	st, err := Parse("s.gir", []byte("graph g {\n  input %x : f32[2*3,4-1]\n  output y = %x\n}\n"))
	if err != nil || st.Values[0].Type.Sym != nil || st.String() != "graph g {\n  input %x : f32[6,3]\n  output y = %x\n}\n" {
		t.Errorf("constant expressions: %v\n%s", err, st)
	}
	c := g.Clone()
	c.Dims[0].Hi = 3
	if g.Dims[0].Hi != 64 {
		t.Errorf("the clone shares its dims")
	}
}

func TestSymParseErrors(t *testing.T) {
	hdr := "graph g {\n  dims { seq in [1,2048] }\n"
	tests := []struct{ name, src, want string }{
		{"undeclared", hdr + "  input %x : f32[4,batch]\n}", `t.gir:3:20: dim batch is not declared in the graph's dims { }`},
		{"undeclared without dims", "graph g {\n  input %x : f32[seq]\n}", `t.gir:2:18: dim seq is not declared in the graph's dims { }`},
		{"undeclared in an expression", hdr + "  input %x : f32[2*heads+seq]\n}", `t.gir:3:18: dim heads is not declared in the graph's dims { } (in 2*heads+seq)`},
		{"lo > hi", "graph g {\n  dims { seq in [5,2] }\n}", `t.gir:2:10: dim seq has an empty range [5,2]: lo > hi`},
		{"negative", "graph g {\n  dims { seq in [-1,2] }\n}", `t.gir:2:10: dim seq has a negative range [-1,2]`},
		{"over 2^31", "graph g {\n  dims { seq in [1,2147483648] }\n}", `t.gir:2:10: dim seq's bound 2147483648 is over 2^31-1`},
		{"float bound", "graph g {\n  dims { seq in [1,2.5] }\n}", `t.gir:2:20: dim seq: bound 2.5 is not an integer`},
		{"twice", "graph g {\n  dims { seq in [1,2], seq in [1,3] }\n}", `t.gir:2:24: dim seq declared twice`},
		{"two blocks", hdr + "  dims { b in [1,2] }\n}", `t.gir:3:3: dims declared twice`},
		{"late", "graph g {\n  input %x : f32[2]\n  dims { b in [1,2] }\n}", `t.gir:3:3: dims { } must come before the graph's values`},
		{"bad name", "graph g {\n  dims { a.b in [1,2] }\n}", `t.gir:2:10: expected a dim name`},
		{"negative size", hdr + "  input %x : f32[seq-2]\n}", `t.gir:3:18: dimension seq-2 can be as small as -1 over the declared dims`},
		{"symbolic divisor", hdr + "  input %x : f32[4/seq]\n}", `t.gir:3:19: bad dimension "4/seq": / by seq: the divisor must be a positive constant`},
		{"bad char", hdr + "  input %x : f32[seq^2]\n}", `t.gir:3:21: bad dimension "seq^2": unexpected '^'`},
		{"unclosed", hdr + "  input %x : f32[seq\n}", `t.gir:3:18: bad dimension "seq"`},
		{"empty dim", hdr + "  input %x : f32[seq,]\n}", `t.gir:3:22: bad dimension "]"`},
		{"overflow", hdr + "  input %x : f32[seq*4611686018427387904]\n}", `t.gir:3:18: dimension seq*4611686018427387904: bounding`},
	}
	for _, tc := range tests {
		_, err := Parse("t.gir", []byte(tc.src))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: Parse = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Graphs built through the API: the verifier checks the dims, that every symbol is declared and
// that the shape is each expression's bound.
func TestSymVerify(t *testing.T) {
	seq := sym.Sym("seq")
	tests := []struct {
		name string
		dims []Dim
		typ  Type
		want string
	}{
		{"ok", []Dim{{"seq", 1, 8}}, Type{F32, Shape{8, 4}, []sym.Expr{seq, sym.Const(4)}}, ""},
		{"zero size", []Dim{{"seq", 0, 8}}, Type{F32, Shape{8}, []sym.Expr{seq}}, ""},
		{"not the bound", []Dim{{"seq", 1, 8}}, Type{F32, Shape{7}, []sym.Expr{seq}}, "dim 0 (seq) has the bound 8 over the declared dims, but the shape says 7"},
		{"undeclared", nil, Type{F32, Shape{8}, []sym.Expr{seq}}, "dim 0 (seq) uses seq, which the graph's dims { } do not declare"},
		{"negative", []Dim{{"seq", 1, 8}}, Type{F32, Shape{6}, []sym.Expr{sym.Sub(seq, sym.Const(2))}}, "dim 0 (seq-2) cannot be proven in range: it can be as small as -1"},
		{"rank", []Dim{{"seq", 1, 8}}, Type{F32, Shape{8, 2}, []sym.Expr{seq}}, "1 symbolic sizes for 2 dimensions"},
		{"empty range", []Dim{{"seq", 9, 8}}, T(F32, 2), "dim seq has an empty range [9,8]"},
		{"dup", []Dim{{"seq", 1, 8}, {"seq", 1, 8}}, T(F32, 2), "dim seq declared twice"},
		{"bad name", []Dim{{"1x", 1, 8}}, T(F32, 2), `bad dim name "1x"`},
	}
	for _, tc := range tests {
		g := NewGraph("g")
		g.Dims = tc.dims
		g.SetOutput("y", g.Input("x", tc.typ, nil))
		err := Verify(g, nil)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Verify = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestSymType(t *testing.T) {
	r := sym.Ranges{"seq": {Lo: 1, Hi: 2048}}
	seq := sym.Sym("seq")
	ty, err := SymType(F32, r, sym.Div(sym.Add(seq, sym.Const(1)), 2), sym.Const(3))
	if err != nil || ty.String() != "f32[(seq+1)/2,3]" || !ty.Shape.Equal(Shape{1024, 3}) {
		t.Errorf("SymType = %s %v, %v", ty, ty.Shape, err)
	}
	if st, _ := SymType(F32, r, sym.Const(2)); st.Sym != nil || !st.Equal(T(F32, 2)) {
		t.Errorf("a constant type is not static: %#v", st)
	}
	if _, err := SymType(F32, r, sym.Sub(seq, sym.Const(5))); err == nil || !strings.Contains(err.Error(), "cannot be proven in range") {
		t.Errorf("negative: %v", err)
	}
	at, err := ty.At(map[string]int64{"seq": 7})
	if err != nil || !at.Equal(T(F32, 4, 3)) {
		t.Errorf("At(seq=7) = %s, %v", at, err)
	}
	// A static type equals a symbolic one only when every axis is the same constant.
	if ty.Equal(T(F32, 1024, 3)) || T(F32, 1024, 3).Equal(ty) {
		t.Errorf("a symbolic type equals its bound")
	}
	if !(Type{F32, Shape{3}, []sym.Expr{sym.Const(3)}}).Equal(T(F32, 3)) {
		t.Errorf("a constant symbolic form differs from the static type")
	}
}
