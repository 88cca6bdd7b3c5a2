package nvvm_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// TestFallbackConvFold: a persistent kernel's stage computing a convolution's weight gradient
// over a symbolic batch (codegen/ptx's symconv.go) is borrowed: Lacks names it and the NVVM
// producer's Module refuses it. The same fold as a kernel of its own is not (symconv.go:
// TestSymbolicConvFold), nor a stage without the weight's sizes (a static convolution).
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
	stage := func(sizes map[*ir.Value][]sym.Expr) plan.Kernel {
		return plan.Kernel{Name: "k1_persistent", Graph: g, Stages: []plan.Kernel{{Name: "s0_conv", Graph: g, Symbolic: true, Rows: 8, Sizes: sizes}}}
	}
	const template = "persistent stage of a conv weight gradient folding its symbolic batch"
	k := stage(sizes)
	if note, ok := nvvm.Lacks(k, tgt); !ok || !strings.Contains(note, "no "+template+" template") {
		t.Fatalf("Lacks = %q, %v; want a note naming the %s", note, ok, template)
	}
	if _, _, err := p.Module([]plan.Kernel{k}, tgt); !nvvm.Refused(err) || !strings.Contains(err.Error(), template) {
		t.Fatalf("the NVVM producer's Module: %v, want a refusal naming the %s", err, template)
	}
	own := plan.Kernel{Name: "k0_conv", Graph: g, Symbolic: true, Rows: 8, Sizes: sizes}
	for _, k := range []plan.Kernel{own, stage(nil)} {
		if note, ok := nvvm.Lacks(k, tgt); ok {
			t.Errorf("%s: borrowed: %s", k.Name, note)
		}
	}
}
