package nvvm

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestNormGEMVFallback: a GEMV with a LayerNorm prologue (the passes' normgemv), which this
// package has no template for (its GEMV stand-in, the direct template, reduces nothing), compiles
// with codegen/ptx's entry, says so in its launch, and equals the reference.
func TestNormGEMVFallback(t *testing.T) {
	p := requireProducer(t)
	g := normGEMVGraph(t)
	k := ptx.Kernel{Name: "k0_layernorm_matmul", Graph: g}
	if tpl := ptx.Template(k); tpl != "norm gemv" {
		t.Fatalf("template %q, want norm gemv", tpl)
	}
	text, launches, err := p.Module([]ptx.Kernel{k}, ptx.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if len(launches) != 1 || launches[0].Producer != "ptx" || !strings.Contains(strings.Join(launches[0].Notes, "\n"), "codegen/ptx's") {
		t.Fatalf("launches %+v, want codegen/ptx's entry", launches)
	}
	assemble(t, text, []ptx.Kernel{k})
	checkNormGEMV(t, g, text, k, launches[0])
}

// checkNormGEMV runs normGEMVGraph's kernel k from text and holds it to the reference.
func checkNormGEMV(t *testing.T, g *ir.Graph, text string, k ptx.Kernel, l ptx.Launch) {
	t.Helper()
	in := inputsFor(g, 1)
	got, _ := run(t, text, k, l, in)
	inputs, params := map[string]*tensor.Tensor{"x": in["x"]}, map[string]*tensor.Tensor{"gamma": in["gamma"], "w": in["w"]}
	want, err := ref.Run(g, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want["y"].F {
		if d := math.Abs(got["y"].F[i] - w); !(d <= 1e-4*(1+math.Abs(w))) {
			t.Fatalf("y[%d] = %v, want %v", i, got["y"].F[i], w)
		}
	}
}

// normGEMVGraph is a GEMV of two rows with a LayerNorm prologue, as the passes' normgemv merges it.
func normGEMVGraph(t *testing.T) *ir.Graph {
	t.Helper()
	g, err := ir.Parse("normgemv.gir", []byte(`graph g {
  input %x : f32[2,256]
  param %gamma : f32[256]
  param %w : f32[256,64]
  %n = constant() {dtype=f32, shape=[2,1], value=[256.0]} : f32[2,1]
  %eps = constant() {dtype=f32, shape=[2,1], value=[1e-05]} : f32[2,1]
  %s = reduce_sum(%x) {axes=[1], keepdims=true} : f32[2,1]
  %mean = div(%s, %n) : f32[2,1]
  %mb = broadcast_in_dim(%mean) {dims=[0,1], shape=[2,256]} : f32[2,256]
  %c = sub(%x, %mb) : f32[2,256]
  %sq = mul(%c, %c) : f32[2,256]
  %ss = reduce_sum(%sq) {axes=[1], keepdims=true} : f32[2,1]
  %var = div(%ss, %n) : f32[2,1]
  %ve = add(%var, %eps) : f32[2,1]
  %r = rsqrt(%ve) : f32[2,1]
  %rb = broadcast_in_dim(%r) {dims=[0,1], shape=[2,256]} : f32[2,256]
  %xn = mul(%c, %rb) : f32[2,256]
  %gb = broadcast_in_dim(%gamma) {dims=[1], shape=[2,256]} : f32[2,256]
  %h = mul(%xn, %gb) : f32[2,256]
  %y = dot_general(%h, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[2,64]
  output y = %y
}`))
	if err != nil {
		t.Fatal(err)
	}
	return g
}
