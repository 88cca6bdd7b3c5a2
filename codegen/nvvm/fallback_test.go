package nvvm

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
)

// TestAttentionFallback: a module with an f32 attention kernel under tf32, whose tensor-core
// template has no NVVM counterpart, compiles with codegen/ptx's entry for it beside libNVVM's
// for the others, in the kernels' order, and the launch says whose entry it runs.
func TestAttentionFallback(t *testing.T) {
	p := requireProducer(t)
	g := ir.NewGraph("attn")
	q, k, v := g.Input("q", ir.T(ir.F32, 1, 2, 20, 64), nil), g.Input("k", ir.T(ir.F32, 1, 2, 24, 64), nil), g.Input("v", ir.T(ir.F32, 1, 2, 24, 64), nil)
	attrs := ir.Attrs{"scale": 0.125, "mask": ops.MaskNone}
	g.SetOutput("o", g.Add(ops.AttentionOp, ir.T(ir.F32, 1, 2, 20, 64), attrs, q, k, v))
	loop := ir.NewGraph("neg")
	x := loop.Input("x", ir.T(ir.F32, 16), nil)
	loop.SetOutput("y", loop.Add("neg", x.Type, nil, x))
	kernels := []ptx.Kernel{{Name: "k0_neg", Graph: loop}, {Name: "k1_attention", Graph: g}, {Name: "k2_neg", Graph: loop}}
	tg := ptx.Target{SM: 80, TF32: true}
	if !borrowed(kernels[1], tg) || borrowed(kernels[1], ptx.Target{SM: 80}) {
		t.Fatalf("f32 attention borrowed under tf32 %v, without %v: want only under tf32", borrowed(kernels[1], tg), borrowed(kernels[1], ptx.Target{SM: 80}))
	}
	text, launches, err := p.Module(kernels, tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(launches) != 3 || launches[1].Producer != "ptx" || launches[0].Producer == "ptx" || launches[2].Entry != "k0_neg" {
		t.Fatalf("launches %+v", launches)
	}
	if !strings.Contains(strings.Join(launches[1].Notes, "\n"), "codegen/ptx's") {
		t.Errorf("the attention launch does not say whose entry it runs: %q", launches[1].Notes)
	}
	for _, e := range []string{".entry k0_neg(", ".entry k1_attention("} {
		if strings.Count(text, e) != 1 {
			t.Errorf("the module has %d %s entries, want 1", strings.Count(text, e), e)
		}
	}
	assemble(t, text, kernels[:2])
	in := inputsFor(g, 1)
	got, _ := run(t, text, kernels[1], launches[1], in)
	want, err := ref.Run(g, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want["o"].F {
		if d := math.Abs(got["o"].F[i] - w); !(d <= 5e-3*(1+math.Abs(w))) { // tf32 products
			t.Fatalf("o[%d] = %v, want %v", i, got["o"].F[i], w)
		}
	}
}
