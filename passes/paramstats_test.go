package passes_test

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// TestParamStats: --stats's parameters and their bytes. A float weight counts its elements at
// its dtype's size; a quantized one counts the N·K weights its dequantize stands for, held in
// its integers, scales and zero points (issue 28: bytes per parameter for each format).
func TestParamStats(t *testing.T) {
	for _, c := range []struct {
		name, src     string
		params, bytes int64
	}{
		{"f32", `graph f {
  input %x : f32[1,256]
  param %w : f32[64,256]
  param %b : f32[64]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[1,64]
  output y = %0
}`, 64*256 + 64, 4 * (64*256 + 64)},
		{"int4 g32", `graph q {
  input %x : f16[1,256]
  param %q : u8[64,128]
  param %s : f16[64,8]
  param %z : u8[64,8]
  param %b : f16[64]
  %0 = dequantize(%q, %s, %z) {axis=1, bits=4, group=32} : f16[64,256]
  %1 = dot_general(%x, %0) {lhs_contract=[1], rhs_contract=[1]} : f16[1,64]
  output y = %1
}`, 64*256 + 64, 64*128 + 2*64*8 + 64*8 + 2*64},
		{"no parameters", `graph n {
  input %x : f32[3]
  %0 = neg(%x) : f32[3]
  output y = %0
}`, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := ir.Parse(c.name+".gir", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			bytes, params := passes.ParamStats(g)
			res, err := passes.Run(g, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if params != c.params || bytes != c.bytes || res.Stats.Params != c.params || res.Stats.ParamBytes != c.bytes {
				t.Errorf("ParamStats %d parameters in %d bytes, --stats %d in %d; want %d in %d", params, bytes, res.Stats.Params, res.Stats.ParamBytes, c.params, c.bytes)
			}
		})
	}
}
