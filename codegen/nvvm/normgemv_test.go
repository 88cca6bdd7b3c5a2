package nvvm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// normGEMVGraph is the kernel a LayerNorm (with beta or not) or RMSNorm fused into the GEMV that
// reads it becomes (the passes' normgemv): the norm of x's m rows of k, as the frontends
// decompose it, then x̂·W with W as [k,n] or, kContig, [n,k], plus a bias.
func normGEMVGraph(t *testing.T, norm, dt string, m, n, k int, kContig bool) *ir.Graph {
	t.Helper()
	var sb strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&sb, f+"\n", a...) }
	row, mat := fmt.Sprintf("%s[%d,1]", dt, m), fmt.Sprintf("%s[%d,%d]", dt, m, k)
	w, rc := fmt.Sprintf("%s[%d,%d]", dt, k, n), 0
	if kContig {
		w, rc = fmt.Sprintf("%s[%d,%d]", dt, n, k), 1
	}
	p("graph g {\n  input %%x : %s\n  param %%gamma : %s[%d]\n  param %%beta : %s[%d]\n  param %%w : %s\n  param %%b : %s[%d]", mat, dt, k, dt, k, w, dt, n)
	p("  %%n = constant() {dtype=%s, shape=[%d,1], value=[%d.0]} : %s", dt, m, k, row)
	p("  %%eps = constant() {dtype=%s, shape=[%d,1], value=[1e-05]} : %s", dt, m, row)
	x := "%x"
	if norm != "rmsnorm" {
		p("  %%s = reduce_sum(%%x) {axes=[1], keepdims=true} : %s\n  %%mean = div(%%s, %%n) : %s", row, row)
		p("  %%meanb = broadcast_in_dim(%%mean) {dims=[0,1], shape=[%d,%d]} : %s\n  %%c = sub(%%x, %%meanb) : %s", m, k, mat, mat)
		x = "%c"
	}
	p("  %%sq = mul(%s, %s) : %s\n  %%ss = reduce_sum(%%sq) {axes=[1], keepdims=true} : %s", x, x, mat, row)
	p("  %%var = div(%%ss, %%n) : %s\n  %%ve = add(%%var, %%eps) : %s\n  %%r = rsqrt(%%ve) : %s", row, row, row)
	p("  %%rb = broadcast_in_dim(%%r) {dims=[0,1], shape=[%d,%d]} : %s\n  %%xn = mul(%s, %%rb) : %s", m, k, mat, x, mat)
	p("  %%gb = broadcast_in_dim(%%gamma) {dims=[1], shape=[%d,%d]} : %s\n  %%h = mul(%%xn, %%gb) : %s", m, k, mat, mat)
	h := "%h"
	if norm == "layernorm_bias" {
		p("  %%bb = broadcast_in_dim(%%beta) {dims=[1], shape=[%d,%d]} : %s\n  %%hb = add(%%h, %%bb) : %s", m, k, mat, mat)
		h = "%hb"
	}
	p("  %%y = dot_general(%s, %%w) {lhs_contract=[1], rhs_contract=[%d]} : %s[%d,%d]", h, rc, dt, m, n)
	p("  %%yb = broadcast_in_dim(%%b) {dims=[1], shape=[%d,%d]} : %s[%d,%d]", m, n, dt, m, n)
	p("  %%o = add(%%y, %%yb) : %s[%d,%d]\n  output out = %%o\n}", dt, m, n)
	g, err := ir.Parse("normgemv.gir", []byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestNormGEMV: a GEMV with a LayerNorm (beta or not) or RMSNorm prologue is the NVVM producer's
// own entry (the row prologue, then the direct template) for codegen/ptx's prologue shapes:
// one to gemv.MaxPrologueRows rows (above gemv.MaxUnstagedRows, LayerNorms only, as gemv takes
// them: its row loop holds one accumulator whatever the rows), K under one block's 256 threads and over, on and off the
// vector width, both weight orders, f32, f16 and bf16. checkModule assembles it for sm_80 and
// sm_90 without spills and runs it on the simulator with its checks against the reference (and
// codegen/ptx's GEMV within tolerance: rsqrt is approximate in both).
func TestNormGEMV(t *testing.T) {
	p := requireProducer(t)
	shapes := [][3]int{{1, 33, 300}, {2, 64, 130}, {3, 48, 100}, {4, 40, 257}, {5, 64, 256}, {8, 40, 768}}
	for _, norm := range []string{"layernorm_bias", "layernorm", "rmsnorm"} {
		for _, dt := range []string{"f32", "f16", "bf16"} {
			for i, s := range shapes {
				m, n, k := s[0], s[1], s[2]
				kContig := i%2 == 1
				t.Run(fmt.Sprintf("%s_%s_%dx%dx%d_kcontig=%v", norm, dt, m, n, k, kContig), func(t *testing.T) {
					kern := plan.Kernel{Name: "k0_" + norm, Graph: normGEMVGraph(t, norm, dt, m, n, k, kContig)}
					if m > gemv.MaxUnstagedRows && norm == "rmsnorm" {
						if tpl := plan.Template(kern); tpl == "norm gemv" {
							t.Fatalf("an RMSNorm of %d rows takes the norm gemv template, want at most %d", m, gemv.MaxUnstagedRows)
						}
						return
					}
					if tpl := plan.Template(kern); tpl != "norm gemv" {
						t.Fatalf("template %q, want norm gemv", tpl)
					}
					text, launches, err := p.Module([]plan.Kernel{kern}, plan.Target{SM: 80})
					if err != nil {
						t.Fatal(err)
					}
					if launches[0].Producer == "ptx" {
						t.Fatalf("codegen/ptx's entry, want the NVVM producer's own (notes %q)", launches[0].Notes)
					}
					assemble(t, text, []plan.Kernel{kern})
					checkKernel(t, text, kern, launches[0], uint64(m*n+k), plan.Target{SM: 80})
				})
			}
		}
	}
}

// TestNormGEMVRows: a norm GEMV over gathered embeddings (the decode step's first, passes'
// normgemv) is the NVVM producer's own entry, the gather in its prologue, whether or not it also
// writes the rows (gemv.RowOutput: its first block writes them, gemvnormout.go), at one and
// three rows: checked on the simulator against the reference (the rows bit for bit) and
// codegen/ptx's entry.
func TestNormGEMVRows(t *testing.T) {
	p := requireProducer(t)
	for _, rows := range []bool{true, false} {
		for _, m := range []int{1, 3} {
			t.Run(fmt.Sprintf("rows=%v_m=%d", rows, m), func(t *testing.T) {
				kern := plan.Kernel{Name: "k0_embed", Graph: embedGraph(t, m, rows)}
				if tpl := plan.Template(kern); tpl != "norm gemv" {
					t.Fatalf("template %q, want norm gemv", tpl)
				}
				if note, lacks := Lacks(kern, plan.Target{SM: 80}); lacks {
					t.Fatalf("Lacks = %q", note)
				}
				text, launches, err := p.Module([]plan.Kernel{kern}, plan.Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				assemble(t, text, []plan.Kernel{kern})
				checkKernel(t, text, kern, launches[0], 7, plan.Target{SM: 80})
				if !rows {
					return
				}
				in := inputsFor(kern.Graph, 7)
				got, _ := run(t, text, kern, launches[0], in)
				want, err := ref.Run(kern.Graph, map[string]*tensor.Tensor{"tok": in["tok"]}, map[string]*tensor.Tensor{"wte": in["wte"], "gamma": in["gamma"], "beta": in["beta"], "w": in["w"], "b": in["b"]})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got["emb"].Bytes(), want["emb"].Bytes()) {
					t.Error("the rows differ from the reference's")
				}
			})
		}
	}
}

// embedGraph is normGEMVGraph's RMSNorm of m rows of 256 gathered from a table of 37 by the
// tokens tok, writing the rows as output emb too when rows is set.
func embedGraph(t *testing.T, m int, rows bool) *ir.Graph {
	t.Helper()
	src := normGEMVGraph(t, "rmsnorm", "f32", m, 64, 256, false).String()
	src = strings.Replace(src, fmt.Sprintf("input %%x : f32[%d,256]", m), fmt.Sprintf("param %%wte : f32[37,256]\n  input %%tok : i64[%d]\n  %%x = gather(%%wte, %%tok) : f32[%d,256]", m, m), 1)
	if rows {
		src = strings.Replace(src, "output out = %o", "output out = %o\n  output emb = %x", 1)
	}
	g, err := ir.Parse("embed.gir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return g
}
