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

// TestFallbackReduceViews: a bias gradient over symbolic rows summing attention's heads merged
// back through views that move the rows (codegen/ptx's symfold_reduce_view.go) is borrowed:
// Lacks names it, the NVVM producer's Module refuses it, and backend.NVVM's module runs
// codegen/ptx's entry, with the dims' and the folded count's size parameters, and assembles.
// Without the views' sizes it is the column template over the bound's layout, not borrowed.
func TestFallbackReduceViews(t *testing.T) {
	p := nvvm.RequireProducer(t)
	g, err := ir.Parse("k.gir", []byte("graph k {\n  input %dq : f32[4,2,7,4]\n"+
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[4,7,2,4]\n  %1 = reshape(%0) {shape=[4,7,8]} : f32[4,7,8]\n"+
		"  %2 = reduce_sum(%1) {axes=[0,1]} : f32[8]\n  output db = %2\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, s := sym.Sym("batch"), sym.Sym("seq")
	c := func(n int64) sym.Expr { return sym.Const(n) }
	sizes := map[*ir.Value][]sym.Expr{}
	for _, v := range g.Values {
		switch v.Op {
		case ir.OpInput:
			sizes[v] = []sym.Expr{b, c(2), s, c(4)}
		case "transpose":
			sizes[v] = []sym.Expr{b, s, c(2), c(4)}
		case "reshape":
			sizes[v] = []sym.Expr{b, s, c(8)}
		}
	}
	tgt := plan.Target{SM: 80}
	k := plan.Kernel{Name: "k0_sum", Graph: g, Symbolic: true, Rows: 28, Sizes: sizes}
	const template = "column reduction through views at symbolic sizes"
	if note, ok := nvvm.Lacks(k, tgt); !ok || !strings.Contains(note, "no "+template+" template") {
		t.Fatalf("Lacks = %q, %v; want a note naming the %s", note, ok, template)
	}
	if _, _, err := p.Module([]plan.Kernel{k}, tgt); !nvvm.Refused(err) || !strings.Contains(err.Error(), template) {
		t.Fatalf("the NVVM producer's Module: %v, want a refusal naming the %s", err, template)
	}
	text, launches, err := backend.NVVM{Producer: p}.Module([]plan.Kernel{k}, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if launches[0].Producer != "ptx" || !strings.Contains(strings.Join(launches[0].Notes, "\n"), "codegen/ptx's") {
		t.Errorf("launch %+v: want codegen/ptx's entry, said", launches[0])
	}
	var exprs []string
	for _, a := range launches[0].Params {
		if a.Kind == plan.ArgSize {
			exprs = append(exprs, a.Expr)
		}
	}
	if strings.Join(exprs, " ") != "batch seq " || launches[0].Work == nil {
		t.Errorf("launch size params %q, work %+v: want the dims batch and seq, then the folded count", exprs, launches[0].Work)
	}
	nvvm.Assemble(t, text, []plan.Kernel{k})
	k.Sizes = nil
	if _, ok := nvvm.Lacks(k, tgt); ok {
		t.Error("a column reduction without the views' sizes is borrowed")
	}
}
