package ops

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

var symRanges = sym.Ranges{"batch": {Lo: 1, Hi: 64}, "seq": {Lo: 1, Hi: 2048}, "tok": {Lo: 1, Hi: 2048}, "h": {Lo: 3, Hi: 224}, "w": {Lo: 1, Hi: 224}}

// st parses a type whose dims are expressions over symRanges: st("f32", "batch", "seq", "768").
func st(t *testing.T, d ir.DType, dims ...string) ir.Type {
	t.Helper()
	es := make([]sym.Expr, len(dims))
	for i, s := range dims {
		e, err := sym.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		es[i] = e
	}
	ty, err := ir.SymType(d, symRanges, es...)
	if err != nil {
		t.Fatal(err)
	}
	return ty
}

func TestInferSym(t *testing.T) {
	f := ir.F32
	tests := []struct {
		name  string
		op    string
		args  []ir.Type
		attrs ir.Attrs
		want  []string // the declared result, nil when building
		out   string   // the result type, or the error's text
	}{
		{"add", "add", []ir.Type{st(t, f, "batch", "seq"), st(t, f, "batch", "seq")}, nil, nil, "f32[batch,seq]"},
		{"add unequal", "add", []ir.Type{st(t, f, "seq"), st(t, f, "tok")}, nil, nil,
			"add: operand sizes differ (f32[seq] and f32[tok]) in dim 0: seq and tok are not provably equal"},
		{"compare", "lt", []ir.Type{st(t, f, "(seq+1)/2"), st(t, f, "(2*seq+2)/4")}, nil, nil, "bool[(seq+1)/2]"},
		{"reduce", "reduce_sum", []ir.Type{st(t, f, "batch", "seq", "768")}, ir.Attrs{"axes": []int{1}}, nil, "f32[batch,768]"},
		{"reduce keepdims", "reduce_max", []ir.Type{st(t, f, "batch", "seq", "768")}, ir.Attrs{"axes": []int{1, 2}, "keepdims": true}, nil, "f32[batch,1,1]"},
		{"transpose", "transpose", []ir.Type{st(t, f, "batch", "seq", "4")}, ir.Attrs{"perm": []int{2, 0, 1}}, nil, "f32[4,batch,seq]"},
		{"matmul", "dot_general", []ir.Type{st(t, f, "batch*seq", "768"), ir.T(f, 768, 3072)}, ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}, nil, "f32[batch*seq,3072]"},
		{"batched scores", "dot_general", []ir.Type{st(t, f, "batch", "seq", "64"), st(t, f, "batch", "64", "seq")},
			ir.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{1}}, nil, "f32[batch,seq,seq]"},
		{"contract unequal", "dot_general", []ir.Type{st(t, f, "4", "seq"), st(t, f, "tok", "4")}, ir.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{0}}, nil,
			"dot_general: contracting dims 1 and 0 of f32[4,seq] and f32[tok,4]: seq and tok are not provably equal"},
		{"reshape merge", "reshape", []ir.Type{st(t, f, "batch", "seq", "768")}, ir.Attrs{"shape": []int{131072, 768}}, nil, "f32[batch*seq,768]"},
		{"reshape split", "reshape", []ir.Type{st(t, f, "batch", "seq", "768")}, ir.Attrs{"shape": []int{64, 2048, 12, 64}}, nil, "f32[batch,seq,12,64]"},
		{"reshape unsplit", "reshape", []ir.Type{st(t, f, "batch*seq", "768")}, ir.Attrs{"shape": []int{64, 2048, 768}}, nil,
			"reshape: cannot express f32[batch*seq,768] reshaped to [64,2048,768] over its sizes (768*batch*seq): batch*seq is not provably a multiple of the static dims of [64,2048]; declare the result type"},
		{"reshape split by 12", "reshape", []ir.Type{st(t, f, "12*seq")}, ir.Attrs{"shape": []int{2048, 12}}, nil, "f32[seq,12]"},
		{"reshape not a multiple", "reshape", []ir.Type{st(t, f, "seq")}, ir.Attrs{"shape": []int{2, 1024}}, nil,
			"reshape: cannot express f32[seq] reshaped to [2,1024] over its sizes (seq): seq is not provably a multiple of the static dims of [2,1024]"},
		{"reshape ones", "reshape", []ir.Type{st(t, f, "seq", "1")}, ir.Attrs{"shape": []int{1, 2048}}, nil, "f32[1,seq]"},
		{"reshape declared", "reshape", []ir.Type{st(t, f, "batch", "seq", "768")}, ir.Attrs{"shape": []int{131072, 768}}, []string{"seq*batch", "768"}, "f32[batch*seq,768]"},
		{"reshape declared wrong", "reshape", []ir.Type{st(t, f, "seq", "2")}, ir.Attrs{"shape": []int{4096}}, []string{"seq+2048"},
			"reshape: f32[seq,2] to f32[seq+2048] changes the element count: seq+2048 is not 2*seq"},
		{"concat", "concat", []ir.Type{st(t, f, "seq", "4"), ir.T(f, 3, 4), st(t, f, "seq", "4")}, ir.Attrs{"axis": 0}, nil, "f32[2*seq+3,4]"},
		{"concat unequal", "concat", []ir.Type{st(t, f, "4", "seq"), st(t, f, "4", "tok")}, ir.Attrs{"axis": 0}, nil,
			"concat: dim 1 of f32[4,seq] and f32[4,tok]: seq and tok are not provably equal"},
		{"slice static dim", "slice", []ir.Type{st(t, f, "seq", "8")}, ir.Attrs{"start": []int{0, 2}, "limit": []int{2048, 8}, "stride": []int{1, 3}}, nil, "f32[seq,2]"},
		{"slice symbolic dim", "slice", []ir.Type{st(t, f, "seq", "8")}, ir.Attrs{"start": []int{1, 0}, "limit": []int{2048, 8}}, nil,
			"slice: dim 0 of f32[seq,8] is seq: a symbolic dim is sliced whole"},
		{"pad", "pad", []ir.Type{st(t, f, "seq", "2")}, ir.Attrs{"low": []int{1, 0}, "high": []int{2, 0}}, nil, "f32[seq+3,2]"},
		{"conv", "conv2d", []ir.Type{st(t, f, "batch", "3", "h", "w+2"), ir.T(f, 16, 3, 3, 3)}, ir.Attrs{"stride": []int{2, 2}, "padding": []int{1, 1}}, nil,
			"f32[batch,16,(h+1)/2,(w+1)/2+1]"},
		{"conv too small", "conv2d", []ir.Type{st(t, f, "batch", "3", "w", "h"), ir.T(f, 16, 3, 3, 3)}, nil, nil,
			"conv2d: output size w-2 (input w, window 3, stride 1, padding 0, dilation 1) can be -1: declare the input's range so that the window fits"},
		{"conv symbolic channels", "conv2d", []ir.Type{st(t, f, "1", "batch", "h", "h"), ir.T(f, 16, 64, 3, 3)}, nil, nil,
			"conv2d: input channels: batch and 64 are not provably equal"},
		{"conv weight gradient", "conv2d", []ir.Type{st(t, f, "2", "batch", "5", "5"), st(t, f, "4", "batch", "5", "5")}, ir.Attrs{"padding": []int{1, 1}}, nil, "f32[2,4,3,3]"},
		{"conv grouped weight gradient", "conv2d", []ir.Type{st(t, f, "2", "2*batch", "9", "9"), st(t, f, "6", "batch", "4", "4")}, ir.Attrs{"dilation": []int{2, 2}, "groups": 2}, nil, "f32[2,6,3,3]"},
		{"conv weight gradient other channels", "conv2d", []ir.Type{st(t, f, "2", "h", "5", "5"), st(t, f, "4", "w", "5", "5")}, nil, nil,
			"conv2d: input channels: h and w are not provably equal"},
		{"conv symbolic output channels", "conv2d", []ir.Type{st(t, f, "2", "batch", "5", "5"), st(t, f, "batch", "batch", "5", "5")}, nil, nil,
			"conv2d: the weight's dim 0 must be static, have batch"},
		{"philox declared", "philox_uniform", []ir.Type{ir.T(ir.I64)}, ir.Attrs{"shape": []int{64, 3}}, []string{"batch", "3"}, "f32[batch,3]"},
		{"philox static", "philox_uniform", []ir.Type{ir.T(ir.I64)}, ir.Attrs{"shape": []int{64, 3}}, nil, "f32[64,3]"},
		{"philox declared at another bound", "philox_uniform", []ir.Type{ir.T(ir.I64)}, ir.Attrs{"shape": []int{64, 3}}, []string{"seq", "3"}, "philox_uniform: "},
		{"max pool", "max_pool2d", []ir.Type{st(t, f, "batch", "3", "h", "h")}, ir.Attrs{"kernel": []int{2, 2}}, nil, "f32[batch,3,h/2,h/2]"},
		{"avg pool", "avg_pool2d", []ir.Type{st(t, f, "batch", "3", "h", "h")}, ir.Attrs{"kernel": []int{3, 3}, "stride": []int{1, 1}, "padding": []int{1, 1}}, nil, "f32[batch,3,h,h]"},
		{"broadcast declared", "broadcast_in_dim", []ir.Type{ir.T(f, 768)}, ir.Attrs{"shape": []int{64, 2048, 768}, "dims": []int{2}}, []string{"batch", "seq", "768"}, "f32[batch,seq,768]"},
		{"broadcast from 1", "broadcast_in_dim", []ir.Type{st(t, f, "batch", "1")}, ir.Attrs{"shape": []int{64, 2048}, "dims": []int{0, 1}}, []string{"batch", "seq"}, "f32[batch,seq]"},
		{"broadcast static", "broadcast_in_dim", []ir.Type{st(t, f, "seq")}, ir.Attrs{"shape": []int{4, 2048}, "dims": []int{1}}, nil, "f32[4,seq]"},
		{"broadcast unequal", "broadcast_in_dim", []ir.Type{st(t, f, "seq")}, ir.Attrs{"shape": []int{64, 2048}, "dims": []int{1}}, []string{"batch", "tok"},
			"broadcast_in_dim: operand dim 0 of f32[seq] maps to result dim 1: seq and tok are not provably equal"},
		{"gather", "gather", []ir.Type{ir.T(f, 1000, 64), st(t, ir.I64, "batch", "seq")}, nil, nil, "f32[batch,seq,64]"},
		{"update slice", "update_slice", []ir.Type{st(t, f, "batch", "4", "64", "8"), st(t, f, "batch", "4", "1", "8"), st(t, ir.I64, "batch")}, ir.Attrs{"axis": 2}, nil, "f32[batch,4,64,8]"},
		{"update slice other batch", "update_slice", []ir.Type{st(t, f, "batch", "4", "64", "8"), st(t, f, "64", "4", "1", "8"), st(t, ir.I64, "batch")}, ir.Attrs{"axis": 2}, nil,
			"update_slice: dim 0 of operand f32[batch,4,64,8] and update f32[64,4,1,8]: batch and 64 are not provably equal"},
		{"update slice start", "update_slice", []ir.Type{st(t, f, "batch", "4", "64", "8"), st(t, f, "batch", "4", "1", "8"), ir.T(ir.I64, 64)}, ir.Attrs{"axis": 2}, nil,
			"update_slice: start i64[64] for operand f32[batch,4,64,8]: batch and 64 are not provably equal"},
		{"update slice symbolic axis", "update_slice", []ir.Type{st(t, f, "batch", "seq", "8"), st(t, f, "batch", "1", "8"), st(t, ir.I64, "batch")}, ir.Attrs{"axis": 1}, nil,
			"update_slice: the operand's size at the axis must be static, have seq"},
		{"update slice symbolic update", "update_slice", []ir.Type{st(t, f, "batch", "2048", "8"), st(t, f, "batch", "seq", "8"), st(t, ir.I64, "batch")}, ir.Attrs{"axis": 1}, nil,
			"update_slice: the update's size at the axis must be static, have seq"},
		{"attention", "attention", []ir.Type{st(t, f, "batch", "4", "seq", "16"), st(t, f, "batch", "2", "seq", "16"), st(t, f, "batch", "2", "seq", "8")}, ir.Attrs{"scale": 0.25, "mask": "causal"}, nil, "f32[batch,4,seq,8]"},
		{"attention position bias", "attention", []ir.Type{st(t, f, "batch", "4", "seq", "16"), st(t, f, "batch", "2", "2048", "16"), st(t, f, "batch", "2", "2048", "8"), st(t, ir.I32, "batch"), st(t, f, "1", "4", "seq", "2048")},
			ir.Attrs{"scale": 0.25, "mask": "position", "additive": true}, nil, "f32[batch,4,seq,8]"},
		{"attention k and v lengths", "attention", []ir.Type{st(t, f, "batch", "4", "seq", "16"), st(t, f, "batch", "2", "seq", "16"), st(t, f, "batch", "2", "tok", "8")}, ir.Attrs{"scale": 0.25, "mask": "none"}, nil,
			"attention: k's and v's key count: seq and tok are not provably equal"},
		{"attention batch", "attention", []ir.Type{st(t, f, "batch", "4", "seq", "16"), st(t, f, "64", "2", "seq", "16"), st(t, f, "64", "2", "seq", "8")}, ir.Attrs{"scale": 0.25, "mask": "none"}, nil,
			"attention: q's and k's batch: batch and 64 are not provably equal"},
		{"attention bias", "attention", []ir.Type{st(t, f, "batch", "4", "seq", "16"), st(t, f, "batch", "4", "seq", "16"), st(t, f, "batch", "4", "seq", "16"), st(t, f, "batch", "4", "seq", "tok")},
			ir.Attrs{"scale": 0.25, "mask": "none", "additive": true}, nil, "attention: the bias's dim 3: tok and seq are not provably equal"},
		{"attention lse", "attention_lse", []ir.Type{st(t, f, "batch", "4", "seq", "16"), st(t, f, "batch", "2", "seq", "16"), st(t, f, "batch", "2", "seq", "8")}, ir.Attrs{"scale": 0.25, "mask": "none"}, nil, "f32[batch,4,seq]"},
		{"attention grad", "attention_grad", []ir.Type{st(t, f, "batch", "4", "seq", "16"), st(t, f, "batch", "2", "seq", "16"), st(t, f, "batch", "2", "seq", "8"),
			st(t, f, "batch", "4", "seq", "8"), st(t, f, "batch", "4", "seq", "8"), st(t, f, "batch", "4", "seq")}, ir.Attrs{"scale": 0.25, "mask": "none", "wrt": "k", "lse": true}, nil, "f32[batch,2,seq,16]"},
		{"attention grad do", "attention_grad", []ir.Type{st(t, f, "batch", "4", "seq", "16"), st(t, f, "batch", "2", "seq", "16"), st(t, f, "batch", "2", "seq", "8"),
			st(t, f, "batch", "4", "seq", "8"), st(t, f, "batch", "4", "tok", "8")}, ir.Attrs{"scale": 0.25, "mask": "none", "wrt": "q"}, nil, "attention_grad: attention_grad's operand 4, dim 2: tok and seq are not provably equal"},
		{"no rule", "iota", nil, ir.Attrs{"shape": []int{2048}, "dim": 0, "dtype": ir.I32}, []string{"seq"}, "iota: takes no symbolic sizes, have  and the result sizes [seq]"},
		{"bound check", "add", []ir.Type{st(t, f, "seq"), ir.T(f, 5)}, nil, nil, "add: operand types differ: f32[2048] and f32[5]"},
	}
	for _, tc := range tests {
		var want []sym.Expr
		if tc.want != nil {
			want = st(t, f, tc.want...).Axes()
		}
		got, err := InferSym(tc.op, tc.args, tc.attrs, symRanges, want)
		if wantErr := strings.Contains(tc.out, ": "); err != nil || wantErr {
			if err == nil || !wantErr || !strings.Contains(err.Error(), tc.out) {
				t.Errorf("%s: %s, %v; want %s", tc.name, got, err, tc.out)
			}
			continue
		}
		if got.String() != tc.out {
			t.Errorf("%s: %s %v, want %s", tc.name, got, got.Shape, tc.out)
		}
		if msg := ir.Verify(graphOf(got), nil); msg != nil {
			t.Errorf("%s: the result breaks the bound rule: %v", tc.name, msg)
		}
	}
}

// graphOf is a one-input graph of type t over symRanges' dims, for the verifier's bound rule.
func graphOf(t ir.Type) *ir.Graph {
	g := ir.NewGraph("g")
	for _, n := range []string{"batch", "seq", "tok", "h", "w"} {
		g.DeclareDim(n, int(symRanges[n].Lo), int(symRanges[n].Hi))
	}
	g.SetOutput("y", g.Input("x", t, nil))
	return g
}

// Static types take the static path: InferSym is Infer.
func TestInferSymStatic(t *testing.T) {
	a, err := InferSym("add", []ir.Type{ir.T(ir.F32, 2), ir.T(ir.F32, 2)}, nil, nil, nil)
	if err != nil || a.Sym != nil || a.String() != "f32[2]" {
		t.Errorf("static add: %s, %v", a, err)
	}
}

// The verifier checks a .gir's symbolic types against the ops: an op whose sizes contradict the
// declared ranges is refused with its file:line and the expression.
func TestCheckSymGraph(t *testing.T) {
	const hdr = "graph g {\n  dims { batch in [1,64], seq in [1,2048], h in [1,224] }\n"
	tests := []struct{ name, body, want string }{
		{"ok", `  input %x : f32[batch,seq,768]
  param %w : f32[768,768] {init="zeros"}
  %0 = reshape(%x) {shape=[131072,768]} : f32[batch*seq,768]
  %1 = dot_general(%0, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[batch*seq,768]
  %2 = reshape(%1) {shape=[64,2048,768]} : f32[batch,seq,768]
  %3 = add(%2, %x) : f32[batch,seq,768]
  output y = %3
`, ""},
		{"window", `  input %x : f32[batch,3,h,h]
  %0 = max_pool2d(%x) {kernel=[2,2]} : f32[batch,3,h/2,h/2]
  output y = %0
`, "t.gir:4: %0 = max_pool2d(%x) {kernel=[2,2]} : f32[batch,3,h/2,h/2]: max_pool2d: output size h/2 (input h, window 2, stride 2, padding 0, dilation 1) can be 0: declare the input's range so that the window fits"},
		{"wrong symbol", `  input %x : f32[seq]
  %0 = neg(%x) : f32[2048]
  output y = %0
`, "t.gir:4: %0 = neg(%x) : f32[2048]: result type is f32[2048], but the op computes f32[seq]"},
		{"ambiguous split declared", `  input %x : f32[batch*seq]
  %0 = reshape(%x) {shape=[64,2048]} : f32[batch,seq]
  output y = %0
`, ""},
		{"a static result of a symbolic operand", `  input %x : f32[batch*seq]
  %0 = reshape(%x) {shape=[64,2048]} : f32[64,2048]
  output y = %0
`, "t.gir:4: %0 = reshape(%x) {shape=[64,2048]} : f32[64,2048]: reshape: cannot express f32[batch*seq] reshaped to [64,2048] over its sizes (batch*seq): batch*seq is not provably a multiple of the static dims of [64,2048]; declare the result type"},
	}
	for _, tc := range tests {
		g, err := ir.Parse("t.gir", []byte(hdr+tc.body+"}\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		err = Verify(g)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Errorf("%s: Verify = %v\nwant %s", tc.name, err, tc.want)
		}
	}
}
