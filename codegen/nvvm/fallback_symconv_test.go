package nvvm_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// TestFallbackConvFold: a convolution's weight gradient over a symbolic batch (the batch its
// input channels, read through views; codegen/ptx's symconv.go) is borrowed, as a kernel and as
// a persistent kernel's stage: Lacks names it, the NVVM producer's Module refuses it, and
// backend.NVVM's module runs codegen/ptx's entry for it, with the taps' size parameter, and
// assembles. Without the weight's sizes it is a static convolution, not borrowed.
func TestFallbackConvFold(t *testing.T) {
	p := nvvm.RequireProducer(t)
	g, err := ir.Parse("k.gir", []byte("graph k {\n  input %x : f32[8,2,5,5]\n  input %dy : f32[8,4,5,5]\n"+
		"  %0 = transpose(%x) {perm=[1,0,2,3]} : f32[2,8,5,5]\n  %1 = transpose(%dy) {perm=[1,0,2,3]} : f32[4,8,5,5]\n"+
		"  %2 = conv2d(%0, %1) {padding=[1,1]} : f32[2,4,3,3]\n  output dw = %2\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[*ir.Value][]sym.Expr{}
	for _, v := range g.Values {
		if v.Op == "transpose" {
			s := v.Type.Shape
			sizes[v] = []sym.Expr{sym.Const(int64(s[0])), sym.Sym("batch"), sym.Const(int64(s[2])), sym.Const(int64(s[3]))}
		}
	}
	tgt := plan.Target{SM: 80}
	own := plan.Kernel{Name: "k0_conv", Graph: g, Symbolic: true, Rows: 8, Sizes: sizes}
	persistent := plan.Kernel{Name: "k1_persistent", Graph: g, Stages: []plan.Kernel{{Name: "s0_conv", Graph: g, Symbolic: true, Rows: 8, Sizes: sizes}}}
	const template = "conv weight gradient folding its symbolic batch"
	for _, k := range []plan.Kernel{own, persistent} {
		if note, ok := nvvm.Lacks(k, tgt); !ok || !strings.Contains(note, "no "+template+" template") {
			t.Fatalf("%s: Lacks = %q, %v; want a note naming the %s", k.Name, note, ok, template)
		}
		if _, _, err := p.Module([]plan.Kernel{k}, tgt); !nvvm.Refused(err) || !strings.Contains(err.Error(), template) {
			t.Fatalf("%s: the NVVM producer's Module: %v, want a refusal naming the %s", k.Name, err, template)
		}
	}
	text, launches, err := backend.NVVM{Producer: p}.Module([]plan.Kernel{own}, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if launches[0].Producer != "ptx" || !strings.Contains(strings.Join(launches[0].Notes, "\n"), "codegen/ptx's") {
		t.Errorf("launch %+v: want codegen/ptx's entry, said", launches[0])
	}
	var taps bool
	for _, a := range launches[0].Params {
		taps = taps || a.Kind == plan.ArgSize && a.Expr == ""
	}
	if !taps || launches[0].Work == nil || launches[0].Work.Scale != 25 {
		t.Errorf("launch params %+v, work %+v: want the taps' size parameter, 25 per row", launches[0].Params, launches[0].Work)
	}
	nvvm.Assemble(t, text, []plan.Kernel{own})
	own.Sizes = nil
	if _, ok := nvvm.Lacks(own, tgt); ok {
		t.Error("a convolution without the weight's sizes is borrowed")
	}
}
