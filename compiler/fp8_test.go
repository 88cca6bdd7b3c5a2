package compiler_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
)

// fp8Graphs quantize with a per-row scale and dequantize, multiply two fp8 matrices quantized
// with per-tensor scales (the fp8 pass's f16 GEMM, the scales applied after), and multiply by
// fp8 weights widened to f16.
var fp8Graphs = []string{`graph rowq {
  input %x: f32[37,130]
  input %s: f32[37,1]
  %sb = broadcast_in_dim(%s) {shape=[37,130], dims=[0,1]}: f32[37,130]
  %y = div(%x, %sb): f32[37,130]
  %q = cast(%y) {to=F8}: F8[37,130]
  %d = cast(%q) {to=f32}: f32[37,130]
  %r = mul(%d, %sb): f32[37,130]
  output q = %q
  output r = %r
}`, `graph mm {
  input %a: f32[64,96]
  input %b: f32[96,80]
  input %sa: f32[]
  input %sb: f32[]
  %sab = broadcast_in_dim(%sa) {shape=[64,96], dims=[]}: f32[64,96]
  %sbb = broadcast_in_dim(%sb) {shape=[96,80], dims=[]}: f32[96,80]
  %an = div(%a, %sab): f32[64,96]
  %bn = div(%b, %sbb): f32[96,80]
  %qa = cast(%an) {to=F8}: F8[64,96]
  %qb = cast(%bn) {to=F8}: F8[96,80]
  %d = dot_general(%qa, %qb) {lhs_contract=[1], rhs_contract=[0]}: f16[64,80]
  %df = cast(%d) {to=f32}: f32[64,80]
  %s = mul(%sa, %sb): f32[]
  %sy = broadcast_in_dim(%s) {shape=[64,80], dims=[]}: f32[64,80]
  %y = mul(%df, %sy): f32[64,80]
  output y = %y
}`, `graph wq {
  input %x: f16[8,96]
  input %w: F8[96,40]
  %wf = cast(%w) {to=f16}: f16[96,40]
  %d = dot_general(%x, %wf) {lhs_contract=[1], rhs_contract=[0]}: f16[8,40]
  output y = %d
}`}

// TestFP8Models: fp8 graphs compile for sm_89 and sm_90 and agree with the reference on the
// simulator; sm_80 refuses them naming the dtype and the target.
func TestFP8Models(t *testing.T) {
	for _, d := range []ir.DType{ir.F8E4M3, ir.F8E5M2} {
		for i, src := range fp8Graphs {
			src = strings.ReplaceAll(src, "F8", d.String())
			g, err := ir.Parse("fp8.gir", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			for _, target := range []ptx.Target{{SM: 89}, {SM: 90}} {
				checkRandom(t, g, target, uint64(i+1))
			}
			_, err = compiler.Compile(g, compiler.Options{Target: ptx.Target{SM: 80}})
			if err == nil || !strings.Contains(err.Error(), d.String()+" needs sm_89 or sm_90") || !strings.Contains(err.Error(), "sm_80") {
				t.Errorf("%s for sm_80: %v", g.Name, err)
			}
		}
	}
}
