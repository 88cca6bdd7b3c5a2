package nvvm_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/internal/symtest"
	"github.com/gcomp/gcomp/ir"
)

// TestFallbackContract: batched products at symbolic sizes, contracting seq (a symbolic dim
// that is not the rows: codegen/ptx's symcontract.go) or q·kᵀ by hand with seq its N
// (symcontract_rhs.go), are the NVVM producer's own on FFMA (f32) and on tensor cores (f16, bf16,
// and f32 on tf32: symcontract_mma.go): Lacks names nothing and its Module builds them with
// seq's parameter, as it does a batched product over a symbolic batch with a static K.
func TestFallbackContract(t *testing.T) {
	p := nvvm.RequireProducer(t)
	for _, tc := range []struct {
		src  string
		tf32 bool
	}{
		{"graph k {\n  input %x : f32[2,13,12]\n  input %y : f32[2,13,20]\n  %0 = dot_general(%x, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : f32[2,12,20]\n  output out = %0\n}\n", false},
		{"graph k {\n  input %p : f16[2,12,13]\n  input %v : f16[2,13,16]\n  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f16[2,12,16]\n  output out = %0\n}\n", false},
		{"graph k {\n  input %p : f32[2,12,13]\n  input %v : f32[2,13,16]\n  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,12,16]\n  output out = %0\n}\n", true},
		// q·kᵀ by hand, seq its N (symcontract_rhs.go).
		{"graph k {\n  input %q : f32[2,9,16]\n  input %k : f32[2,13,16]\n  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[2,9,13]\n  output out = %0\n}\n", false},
		{"graph k {\n  input %q : bf16[2,9,16]\n  input %k : bf16[2,13,16]\n  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : bf16[2,9,13]\n  output out = %0\n}\n", false},
	} {
		g, err := ir.Parse("k.gir", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		tgt := plan.Target{SM: 80, TF32: tc.tf32}
		k := plan.Kernel{Name: "k0_contract", Graph: g, Symbolic: true, Rows: 2, Sizes: symtest.SizesOver(g, 13, "seq", nil)}
		if note, ok := nvvm.Lacks(k, tgt); ok {
			t.Errorf("%s: a batched product over seq is borrowed: %s", g.Inputs()[0].Type, note)
		}
		if _, launches, err := p.Module([]plan.Kernel{k}, tgt); err != nil {
			t.Errorf("%s: %v", g.Inputs()[0].Type, err)
		} else if !slices.ContainsFunc(launches[0].Params, func(a plan.Arg) bool { return a.Expr == "seq" }) {
			t.Errorf("%s: params %+v: no parameter for seq", g.Inputs()[0].Type, launches[0].Params)
		}
		// The batch symbolic, K static: not borrowed.
		k.Sizes = symtest.SizesOver(g, 2, "b", nil)
		if _, ok := nvvm.Lacks(k, tgt); ok {
			t.Error("a batched product over a symbolic batch with a static K is borrowed")
		}
	}
}

// TestFallbackBroadcast: q·kᵀ by hand over two heads, seq its N, plus a mask [2, 1, 9, seq]
// broadcast over the heads, or a mask [2, seq, 9] transposed before its broadcast. On FFMA (f32)
// and on tensor cores (f16) the epilogue's views are the NVVM producer's own
// (symcontract_bcast.go: TestSymbolicContractBroadcast, TestSymbolicContractMMAViews); an FFMA
// product whose only symbolic dim is M (its epilogue reads at the bound's strides) is borrowed
// naming the broadcast, and so is a broadcast of a value computed in the kernel at symbolic
// sizes.
func TestFallbackBroadcast(t *testing.T) {
	p := nvvm.RequireProducer(t)
	const bcast = "batched product reading a broadcast at symbolic sizes in its epilogue"
	mask := func(d string, t, seq int, neg bool) string {
		s := fmt.Sprintf("graph k {\n  input %%q : %[1]s[2,2,%[2]d,16]\n  input %%k : %[1]s[2,2,%[3]d,16]\n  input %%m : %[1]s[2,1,%[2]d,%[3]d]\n"+
			"  %%0 = dot_general(%%q, %%k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : %[1]s[2,2,%[2]d,%[3]d]\n", d, t, seq)
		src := "%m"
		if neg {
			s += fmt.Sprintf("  %%4 = neg(%%m) : %[1]s[2,1,%[2]d,%[3]d]\n", d, t, seq)
			src = "%4"
		}
		return s + fmt.Sprintf("  %%1 = broadcast_in_dim(%[4]s) {dims=[0,1,2,3], shape=[2,2,%[2]d,%[3]d]} : %[1]s[2,2,%[2]d,%[3]d]\n"+
			"  %%2 = add(%%0, %%1) : %[1]s[2,2,%[2]d,%[3]d]\n  output out = %%2\n}\n", d, t, seq, src)
	}
	transposed := func(d string) string {
		return fmt.Sprintf("graph k {\n  input %%q : %[1]s[2,2,9,16]\n  input %%k : %[1]s[2,2,13,16]\n  input %%m : %[1]s[2,13,9]\n"+
			"  %%0 = dot_general(%%q, %%k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : %[1]s[2,2,9,13]\n"+
			"  %%1 = transpose(%%m) {perm=[0,2,1]} : %[1]s[2,9,13]\n  %%2 = broadcast_in_dim(%%1) {dims=[0,2,3], shape=[2,2,9,13]} : %[1]s[2,2,9,13]\n"+
			"  %%3 = add(%%0, %%2) : %[1]s[2,2,9,13]\n  output out = %%3\n}\n", d)
	}
	for _, tc := range []struct {
		name, src string
		borrowed  bool
		built     bool // codegen/ptx builds it: backend.NVVM's module has its entry
	}{
		{"FFMA, seq the keys", mask("f32", 9, 13, false), false, true},
		{"tensor cores, seq the keys", mask("f16", 9, 13, false), false, true},
		{"FFMA, a mask transposed", transposed("f32"), false, true},
		{"tensor cores, a mask transposed", transposed("f16"), false, true},
		{"FFMA, seq the queries alone", mask("f32", 13, 9, false), true, true},
		{"tensor cores, seq the queries alone", mask("f16", 13, 9, false), true, true},
		{"FFMA, the mask computed", mask("f32", 9, 13, true), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("k.gir", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			tgt := plan.Target{SM: 80}
			k := plan.Kernel{Name: "k0_contract", Graph: g, Symbolic: true, Rows: 4, Sizes: symtest.SizesOver(g, 13, "seq", nil)}
			note, ok := nvvm.Lacks(k, tgt)
			_, _, err = p.Module([]plan.Kernel{k}, tgt)
			switch {
			case !tc.borrowed && ok:
				t.Errorf("borrowed: %s", note)
			case !tc.borrowed && err != nil:
				t.Errorf("the NVVM producer's Module: %v", err)
			case tc.borrowed && (!ok || !strings.Contains(note, "no "+bcast+" template")):
				t.Errorf("Lacks = %q, %v; want a note naming the %s", note, ok, bcast)
			case tc.borrowed && (!nvvm.Refused(err) || !strings.Contains(err.Error(), bcast)):
				t.Errorf("the NVVM producer's Module: %v, want a refusal naming the %s", err, bcast)
			case tc.borrowed && tc.built:
				text, launches, err := backend.NVVM{Producer: p}.Module([]plan.Kernel{k}, tgt)
				if err != nil {
					t.Fatal(err)
				}
				if launches[0].Producer != "ptx" || !strings.Contains(strings.Join(launches[0].Notes, "\n"), "codegen/ptx's") {
					t.Errorf("launch %+v: want codegen/ptx's entry, said", launches[0])
				}
				nvvm.Assemble(t, text, []plan.Kernel{k})
			}
		})
	}
}
