package backend

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
)

// TestAutoKeepsNormGEMV: a GEMV with a norm prologue, which codegen/nvvm computes with its
// direct template (another launch, so a sample of blocks would not compare the same work), keeps
// codegen/ptx's entry under auto, and the choice says why.
func TestAutoKeepsNormGEMV(t *testing.T) {
	g, err := ir.Parse("normgemv.gir", []byte(`graph g {
  input %x : f32[1,256]
  param %w : f32[256,64]
  %n = constant() {dtype=f32, shape=[1,1], value=[256.0]} : f32[1,1]
  %sq = mul(%x, %x) : f32[1,256]
  %ss = reduce_sum(%sq) {axes=[1], keepdims=true} : f32[1,1]
  %ms = div(%ss, %n) : f32[1,1]
  %r = rsqrt(%ms) : f32[1,1]
  %rb = broadcast_in_dim(%r) {dims=[0,1], shape=[1,256]} : f32[1,256]
  %h = mul(%x, %rb) : f32[1,256]
  %y = dot_general(%h, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[1,64]
  output y = %y
}`))
	if err != nil {
		t.Fatal(err)
	}
	k := ptx.Kernel{Name: "k0_rmsnorm_matmul", Graph: g}
	if tpl := ptx.Template(k); tpl != "norm gemv" {
		t.Fatalf("template %q, want norm gemv", tpl)
	}
	a := &Auto{NVVM: &nvvm.Producer{}}
	_, launches, err := a.Module([]ptx.Kernel{k}, ptx.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Choices[0]; c.Producer != "ptx" || launches[0].Producer != "ptx" || !strings.Contains(c.Why, "GEMV") {
		t.Errorf("choice %+v, launch producer %q: want codegen/ptx's GEMV", c, launches[0].Producer)
	}
}
