package gemv

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// TestNew: the slices cover K exactly once in multiples of KAlign, the blocks reach SMs where
// K allows it, and products whose columns fill the GPU are not split.
func TestNew(t *testing.T) {
	for _, c := range []struct {
		m, n, k, batch      int
		tiles, splits, kper int
	}{
		{1, 768, 3072, 1, 24, 10, 320},
		{1, 768, 768, 1, 24, 6, 128},
		{1, 64, 1024, 12, 2, 8, 128}, // attention's probs·V: 12 heads
		{8, 50257, 768, 1, 1571, 1, 768},
		{1, 1, 100, 1, 1, 1, 128},    // K under MinKPer: one slice
		{2, 4096, 64, 1, 128, 1, 64}, // 128 tiles: under SMs, but K is one slice
	} {
		p := New(c.m, c.n, c.k, c.batch)
		if p.Tiles != c.tiles || p.Splits != c.splits || p.KPer != c.kper {
			t.Errorf("%+v: tiles %d, splits %d of %d; want %d, %d of %d", c, p.Tiles, p.Splits, p.KPer, c.tiles, c.splits, c.kper)
		}
		if p.KPer%KAlign != 0 || (p.Splits-1)*p.KPer >= max(c.k, 1) || p.Splits*p.KPer < c.k {
			t.Errorf("%+v: %d slices of %d do not cover K once", c, p.Splits, p.KPer)
		}
		want := 0
		if p.Splits > 1 {
			want = (4*p.Blocks()*c.m*Cols + 4*p.Tiles*c.batch + 7) / 8 * 8
		}
		if p.ScratchBytes() != want || p.Grid() != [3]int{p.Tiles, p.Splits, c.batch} {
			t.Errorf("%+v: scratch %d (want %d), grid %v", c, p.ScratchBytes(), want, p.Grid())
		}
	}
}

// TestOf: which dot_generals the template takes.
func TestOf(t *testing.T) {
	for _, c := range []struct {
		name, src string
		ok        bool
	}{
		{"rows_8", dot("f32", 8, 64, 64, ""), true},
		{"rows_9", dot("f32", 9, 64, 64, ""), false},
		{"weight_4096", dot("bf16", 1, 64, 64, ""), true},
		{"weight_4095", dot("f16", 1, 63, 65, ""), false},
		{"f64", dot("f64", 1, 64, 64, ""), false},
		{"computed_lhs", dot("f32", 1, 64, 64, "sin"), false},
		{"view_lhs", dot("f32", 1, 64, 64, "transpose"), true},
		{"dequantized_weight", quantDot(8, "%q"), true},
		{"dequantized_weight_9_rows", quantDot(9, "%q"), false},
		{"dequantized_computed", quantDot(1, "%n"), false},
	} {
		d := parseDot(t, c.name, c.src)
		if _, ok := Of(d); ok != c.ok {
			t.Errorf("%s: taken %v, want %v", c.name, ok, c.ok)
		}
	}
}

// dot is x[m,k]·w[k,n] in dtype dt, x passed through op first ("sin", "transpose" of a
// stored [k,m], or none).
func dot(dt string, m, n, k int, op string) string {
	x := fmt.Sprintf("  input %%x : %s[%d,%d]\n", dt, m, k)
	switch op {
	case "sin":
		x += fmt.Sprintf("  %%s = sin(%%x) : %s[%d,%d]\n", dt, m, k)
	case "transpose":
		x = fmt.Sprintf("  input %%x : %s[%d,%d]\n  %%s = transpose(%%x) {perm=[1,0]} : %s[%d,%d]\n", dt, k, m, dt, m, k)
	}
	lhs := "%x"
	if op != "" {
		lhs = "%s"
	}
	return fmt.Sprintf("graph g {\n%s  input %%w : %s[%d,%d]\n  %%0 = dot_general(%s, %%w) {lhs_contract=[1], rhs_contract=[0]} : %s[%d,%d]\n  output y = %%0\n}\n",
		x, dt, k, n, lhs, dt, m, n)
}

// quantDot is x[m,128]·wᵀ with w = dequantize(q', s) of int4 weights [64,128], q' being q
// (qArg "%q") or not(q) (qArg "%n", computed), x the product's lhs.
func quantDot(m int, qArg string) string {
	return fmt.Sprintf(`graph g {
  input %%x : f32[%d,128]
  input %%q : u8[64,64]
  input %%s : f32[64,1]
  %%n = not(%%q) : u8[64,64]
  %%w = dequantize(%s, %%s) {axis=1, bits=4, group=128} : f32[64,128]
  %%0 = dot_general(%%x, %%w) {lhs_contract=[1], rhs_contract=[1]} : f32[%d,64]
  output y = %%0
}
`, m, qArg, m)
}

// TestNewPrologue: a GEMV with a row prologue is cut to one block per SM, not two (each block
// reads the rows from L2 once per reduction, whatever its slice of K), and Of plans a product
// whose lhs is a norm so, a product of a stored lhs with New. GPT-2 small's QKV (2304 columns)
// and fc (3072) projections, TinyLlama's q (2048) and k/v (256) projections.
func TestNewPrologue(t *testing.T) {
	for _, c := range []struct {
		m, n, k             int
		tiles, splits, kper int
	}{
		{1, 2304, 768, 72, 2, 384},    // New: 4 slices of 192
		{1, 3072, 768, 96, 2, 384},    // New: 3 of 256
		{1, 2048, 2048, 64, 3, 704},   // New: 5 of 448
		{1, 256, 2048, 8, 16, 128},    // as New: K allows no more
		{1, 50257, 768, 1571, 1, 768}, // the LM head: its columns fill the GPU
	} {
		p := NewPrologue(c.m, c.n, c.k, 1)
		if p.Tiles != c.tiles || p.Splits != c.splits || p.KPer != c.kper {
			t.Errorf("%+v: tiles %d, splits %d of %d; want %d, %d of %d", c, p.Tiles, p.Splits, p.KPer, c.tiles, c.splits, c.kper)
		}
		if (p.Splits-1)*p.KPer >= c.k || p.Splits*p.KPer < c.k {
			t.Errorf("%+v: %d slices of %d do not cover K once", c, p.Splits, p.KPer)
		}
	}
	norm := `graph g {
  input %x : f32[1,768]
  input %w : f32[768,2304]
  %q = mul(%x, %x) : f32[1,768]
  %v = reduce_sum(%q) {axes=[1], keepdims=true} : f32[1,1]
  %rb = broadcast_in_dim(%v) {dims=[0,1], shape=[1,768]} : f32[1,768]
  %h = mul(%x, %rb) : f32[1,768]
  %y = dot_general(%h, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[1,2304]
  output y = %y
}`
	for _, c := range []struct {
		name, src string
		want      Plan
	}{
		{"norm_lhs", norm, NewPrologue(1, 2304, 768, 1)},
		{"stored_lhs", dot("f32", 1, 2304, 768, ""), New(1, 2304, 768, 1)},
	} {
		d := parseDot(t, c.name, c.src)
		if p, ok := Of(d); !ok || p != c.want {
			t.Errorf("%s: plan %+v (taken %v), want %+v", c.name, p, ok, c.want)
		}
	}
}

// parseDot parses src and returns its (last) dot_general.
func parseDot(t *testing.T, name, src string) *ir.Value {
	t.Helper()
	g, err := ir.Parse(name+".gir", []byte(src))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var d *ir.Value
	for _, v := range g.Values {
		if v.Op == "dot_general" {
			d = v
		}
	}
	return d
}
