package nvvm_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/internal/symtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// TestFallback: a kernel of a template this package has no counterpart for (a tensor-core
// product whose only symbolic dim is M reading a broadcast in its epilogue) is refused by the NVVM producer (nvvm.Refused; nvvm.Lacks
// names it), and codegen/backend's nvvm producer compiles the module with codegen/ptx's entry for
// it beside libNVVM's for the others, in the kernels' order, which assembles; the launch says
// whose entry it runs. (The quantized tensor-core GEMM, once borrowed, is the package's own:
// TestQuantizedMMA.)
func TestFallback(t *testing.T) {
	p := nvvm.RequireProducer(t)
	loop := ir.NewGraph("neg")
	x := loop.Input("x", ir.T(ir.F32, 16), nil)
	loop.SetOutput("y", loop.Add("neg", x.Type, nil, x))
	// q·kᵀ over seq = 13 queries (its only symbolic dim is M) plus a mask broadcast over the
	// heads, on tensor cores: the epilogue of such a product reads at the bound's strides, which
	// this package does not do (TestFallbackBroadcast).
	scores, err := ir.Parse("k.gir", []byte(`graph k {
  input %q : f16[2,2,13,16]
  input %k : f16[2,2,9,16]
  input %m : f16[2,1,13,9]
  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f16[2,2,13,9]
  %1 = broadcast_in_dim(%m) {dims=[0,1,2,3], shape=[2,2,13,9]} : f16[2,2,13,9]
  %2 = add(%0, %1) : f16[2,2,13,9]
  output out = %2
}`))
	if err != nil {
		t.Fatal(err)
	}
	const bcast = "batched product reading a broadcast at symbolic sizes in its epilogue"
	for _, tc := range []struct {
		name     string
		graph    *ir.Graph
		inPlace  bool
		target   plan.Target
		loops    bool                     // between two loop kernels of the NVVM producer's own
		template string                   // the note's
		rows     int                      // > 0: a symbolic kernel of that many rows at the bound
		sizes    map[*ir.Value][]sym.Expr // its values' sizes over the dims (a strided kernel)
	}{
		{"symbolic product reading a broadcast", scores, false, plan.Target{SM: 80}, false, bcast, 4, symtest.SizesOver(scores, 13, "seq", nil)},
		{"symbolic product reading a broadcast between loops", scores, false, plan.Target{SM: 80}, true, bcast, 4, symtest.SizesOver(scores, 13, "seq", nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := plan.Kernel{Name: "k1_borrowed", Graph: tc.graph, InPlace: tc.inPlace, Symbolic: tc.rows > 0, Rows: tc.rows, Sizes: tc.sizes}
			kernels, at := []plan.Kernel{k}, 0
			if tc.loops {
				kernels, at = []plan.Kernel{{Name: "k0_neg", Graph: loop}, k, {Name: "k2_neg", Graph: loop}}, 1
			}
			if note, ok := nvvm.Lacks(k, tc.target); !ok || !strings.Contains(note, "no "+tc.template+" template") || !strings.Contains(note, "codegen/ptx's") {
				t.Fatalf("Lacks = %q, %v; want a note naming the %s and codegen/ptx's entry", note, ok, tc.template)
			}
			if _, _, err := p.Module(kernels, tc.target); !nvvm.Refused(err) || !strings.Contains(err.Error(), tc.template) {
				t.Fatalf("the NVVM producer's Module: %v, want a refusal naming the %s", err, tc.template)
			}
			text, launches, err := backend.NVVM{Producer: p}.Module(kernels, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range launches {
				if borrowed := l.Producer == "ptx"; borrowed != (i == at) {
					t.Fatalf("launch %d of %+v: codegen/ptx's entry %v", i, launches, borrowed)
				}
			}
			if tc.loops && launches[2].Entry != "k0_neg" {
				t.Errorf("k2_neg runs %q, want k0_neg's entry", launches[2].Entry)
			}
			if !strings.Contains(strings.Join(launches[at].Notes, "\n"), "codegen/ptx's") {
				t.Errorf("the launch does not say whose entry it runs: %q", launches[at].Notes)
			}
			for _, kn := range kernels[:at+1] {
				if e := ".entry " + kn.Name + "("; strings.Count(text, e) != 1 {
					t.Errorf("the module has %d %s entries, want 1", strings.Count(text, e), e)
				}
			}
			nvvm.Assemble(t, text, kernels[:at+1])
		})
	}
}

// TestOwnTensorCoreAttention: the tensor-core attention forward writing its rows' log-sum-exp
// (f16, bf16, and f32 under tf32), the forward at symbolic sizes (a strided view), dk/dv
// (attnmma.FitsGradWide: a bias, head dims over 64 too) and dq (FitsGradDQ) on tensor cores,
// once borrowed from codegen/ptx, are the NVVM producer's own: Lacks names nothing, and backend.NVVM's launch
// runs libNVVM's tensor-core entry without a borrowing note.
func TestOwnTensorCoreAttention(t *testing.T) {
	p := nvvm.RequireProducer(t)
	// Attention over seq = 32 queries and keys: its sizes follow seq (nvvm.SeqSizes).
	attnF16 := attention(t, ir.F16, 32, 32, 16)
	for _, tc := range []struct {
		name   string
		graph  *ir.Graph
		target plan.Target
		sizes  map[*ir.Value][]sym.Expr // a symbolic kernel's
	}{
		{"strided symbolic f16 attention", attnF16, plan.Target{SM: 80}, nvvm.SeqSizes(attnF16, attention(t, ir.F16, 31, 31, 16), 32)},
		{"f16 attention with its lse", attentionLSE(t, ir.F16), plan.Target{SM: 80}, nil},
		{"bf16 attention with its lse", attentionLSE(t, ir.BF16), plan.Target{SM: 90}, nil},
		{"tf32 attention with its lse", attentionLSE(t, ir.F32), plan.Target{SM: 80, TF32: true}, nil},
		{"f16 dk and dv", nvvm.AttentionGradGraph(t, ir.F16, "kv"), plan.Target{SM: 80}, nil},
		{"bf16 dv", nvvm.AttentionGradGraph(t, ir.BF16, "v"), plan.Target{SM: 90}, nil},
		{"bf16 dq", nvvm.AttentionGradGraph(t, ir.BF16, "q"), plan.Target{SM: 80}, nil},
		{"f16 dq", nvvm.AttentionGradGraph(t, ir.F16, "q"), plan.Target{SM: 90}, nil},
		{"f16 dk and dv with a bias", nvvm.AttentionGradBiasGraph(t, ir.F16, 64, "kv"), plan.Target{SM: 80}, nil},
		{"bf16 dk at head dim 128", nvvm.AttentionGradBiasGraph(t, ir.BF16, 128, "k"), plan.Target{SM: 90}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := plan.Kernel{Name: "k0_attention", Graph: tc.graph, Symbolic: tc.sizes != nil, Sizes: tc.sizes}
			if note, ok := nvvm.Lacks(k, tc.target); ok {
				t.Fatalf("Lacks = %q, want no borrowed template", note)
			}
			text, launches, err := backend.NVVM{Producer: p}.Module([]plan.Kernel{k}, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if l := launches[0]; l.Producer == "ptx" || strings.Contains(strings.Join(l.Notes, "\n"), "codegen/ptx's") {
				t.Errorf("launch %+v: codegen/ptx's entry, want the NVVM producer's own", l)
			}
			if !strings.Contains(text, "mma.sync") {
				t.Error("the entry has no mma.sync")
			}
		})
	}
}

// attention is one attention op over [1, 2, l, e] queries and s keys, unmasked.
func attention(t *testing.T, d ir.DType, l, s, e int) *ir.Graph {
	t.Helper()
	g := ir.NewGraph("attn")
	args := []*ir.Value{g.Input("q", ir.T(d, 1, 2, l, e), nil), g.Input("k", ir.T(d, 1, 2, s, e), nil), g.Input("v", ir.T(d, 1, 2, s, e), nil)}
	attrs := ir.Attrs{"scale": 1 / math.Sqrt(float64(e)), "mask": ops.MaskNone}
	ty, err := ops.Infer(ops.AttentionOp, []ir.Type{args[0].Type, args[1].Type, args[2].Type}, attrs)
	if err != nil {
		t.Fatal(err)
	}
	g.SetOutput("o", g.Add(ops.AttentionOp, ty, attrs, args...))
	return g
}

// attentionLSE is attention over [1, 2, 64, 64] queries and 40 keys with its rows' log-sum-exp
// as a second output (the forward template writes both).
func attentionLSE(t *testing.T, d ir.DType) *ir.Graph {
	t.Helper()
	g := attention(t, d, 64, 40, 64)
	att := g.Outputs[0].Value
	ty, err := ops.Infer(ops.AttentionLSEOp, []ir.Type{att.Args[0].Type, att.Args[1].Type, att.Args[2].Type}, att.Attrs)
	if err != nil {
		t.Fatal(err)
	}
	lse := g.Add(ops.AttentionLSEOp, ty, att.Attrs.Clone(), att.Args...)
	g.SetOutput("lse", lse)
	return g
}

// TestOwnSymbolicTemplates: the symbolic kinds once borrowed from codegen/ptx (the KV cache write
// over a symbolic batch, the folds of a symbolic kernel's rows, over scattered axes too,
// persistent kernels with symbolic stages) are the NVVM producer's own: Lacks names nothing, its Module takes them, and
// backend.NVVM's launch runs libNVVM's entry without a borrowing note.
func TestOwnSymbolicTemplates(t *testing.T) {
	p := nvvm.RequireProducer(t)
	parse := func(src string) *ir.Graph {
		g, err := ir.Parse("k.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	chain := parse(`graph t {
  input %x : f32[6,40]
  param %w : f32[20,40]
  param %v : f32[40,20]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[6,20]
  %1 = neg(%0) : f32[6,20]
  %2 = dot_general(%1, %v) {lhs_contract=[1], rhs_contract=[1]} : f32[6,40]
  %3 = neg(%2) : f32[6,40]
  %4 = dot_general(%3, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[6,20]
  output y = %4
}`)
	res, err := passes.Run(chain, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kn := res.Kernels.Kernels[0]
	if kn.Kind != passes.Persistent {
		t.Fatalf("want a persistent kernel:\n%s", res.Kernels.String())
	}
	persistent := nvvm.KernelOf(kn, "k0_symbolic")
	persistent.Symbolic, persistent.Rows = true, 6
	for i := range persistent.Stages {
		persistent.Stages[i].Symbolic, persistent.Stages[i].Rows = true, 6
	}
	for _, tc := range []struct {
		name string
		k    plan.Kernel
	}{
		{"symbolic kv cache write", plan.Kernel{Graph: parse(`graph g {
  input %cache : f32[4,2,16,8]
  input %x : f32[4,2,1,8]
  input %pos : i64[4]
  %0 = update_slice(%cache, %x, %pos) {axis=2} : f32[4,2,16,8]
  output y = %0
}`), InPlace: true, Symbolic: true, Rows: 4}},
		{"symbolic column fold", plan.Kernel{Graph: parse("graph k {\n  input %dy : f32[40,37]\n  %0 = reduce_sum(%dy) {axes=[0]} : f32[37]\n  output db = %0\n}\n"), Symbolic: true, Rows: 40}},
		{"symbolic GEMM fold", plan.Kernel{Graph: parse("graph k {\n  input %x : f32[40,12]\n  input %dy : f32[40,20]\n  %0 = dot_general(%x, %dy) {lhs_contract=[0], rhs_contract=[0]} : f32[12,20]\n  output dw = %0\n}\n"), Symbolic: true, Rows: 40}},
		{"symbolic persistent kernel", persistent},
		{"symbolic fold over scattered axes", plan.Kernel{Graph: scatterFold(t), Symbolic: true, Rows: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := tc.k
			k.Name = "k0_symbolic"
			if note, ok := nvvm.Lacks(k, plan.Target{SM: 80}); ok {
				t.Fatalf("Lacks = %q, want no borrowed template", note)
			}
			if _, _, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80}); err != nil {
				t.Fatalf("the NVVM producer's Module: %v", err)
			}
			_, launches, err := backend.NVVM{Producer: p}.Module([]plan.Kernel{k}, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if l := launches[0]; l.Producer == "ptx" || strings.Contains(strings.Join(l.Notes, "\n"), "codegen/ptx's") {
				t.Errorf("launch %+v: codegen/ptx's entry, want the NVVM producer's own", l)
			}
		})
	}
}

// scatterFold is BatchNorm's statistics over [6, 3, 4, 4]'s axes 0, 2 and 3, the rows leading.
func scatterFold(t *testing.T) *ir.Graph {
	g, err := ir.Parse("k.gir", []byte("graph k {\n  input %x : f32[6,3,4,4]\n  %0 = reduce_sum(%x) {axes=[0,2,3], keepdims=true} : f32[1,3,1,1]\n"+
		"  %1 = mul(%x, %x) : f32[6,3,4,4]\n  %2 = reduce_sum(%1) {axes=[0,2,3], keepdims=true} : f32[1,3,1,1]\n  output s = %0\n  output q = %2\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}
