package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/gemv"
)

// normGEMV writes the kernel a LayerNorm (beta or not) or RMSNorm fused into the GEMV that reads
// it becomes: the norm of x's rows, as the frontends decompose it, then x̂·W (W as [K,N] or
// [N,K]) with a bias.
func normGEMV(norm, dt string, m, n, k int, kContig bool) string {
	var sb strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&sb, f+"\n", a...) }
	p("graph g {")
	p("  input %%x : %s[%d,%d]", dt, m, k)
	p("  param %%gamma : %s[%d]", dt, k)
	p("  param %%beta : %s[%d]", dt, k)
	w, rc := fmt.Sprintf("%s[%d,%d]", dt, k, n), 0
	if kContig {
		w, rc = fmt.Sprintf("%s[%d,%d]", dt, n, k), 1
	}
	p("  param %%w : %s", w)
	p("  param %%b : %s[%d]", dt, n)
	p("  %%n = constant() {dtype=%s, shape=[%d,1], value=[%d.0]} : %s[%d,1]", dt, m, k, dt, m)
	p("  %%eps = constant() {dtype=%s, shape=[%d,1], value=[1e-05]} : %s[%d,1]", dt, m, dt, m)
	x := "%x"
	if norm != "rmsnorm" {
		p("  %%s = reduce_sum(%%x) {axes=[1], keepdims=true} : %s[%d,1]", dt, m)
		p("  %%mean = div(%%s, %%n) : %s[%d,1]", dt, m)
		p("  %%meanb = broadcast_in_dim(%%mean) {dims=[0,1], shape=[%d,%d]} : %s[%d,%d]", m, k, dt, m, k)
		p("  %%c = sub(%%x, %%meanb) : %s[%d,%d]", dt, m, k)
		x = "%c"
	}
	p("  %%sq = mul(%s, %s) : %s[%d,%d]", x, x, dt, m, k)
	p("  %%ss = reduce_sum(%%sq) {axes=[1], keepdims=true} : %s[%d,1]", dt, m)
	p("  %%var = div(%%ss, %%n) : %s[%d,1]", dt, m)
	p("  %%ve = add(%%var, %%eps) : %s[%d,1]", dt, m)
	p("  %%r = rsqrt(%%ve) : %s[%d,1]", dt, m)
	p("  %%rb = broadcast_in_dim(%%r) {dims=[0,1], shape=[%d,%d]} : %s[%d,%d]", m, k, dt, m, k)
	p("  %%xn = mul(%s, %%rb) : %s[%d,%d]", x, dt, m, k)
	p("  %%gb = broadcast_in_dim(%%gamma) {dims=[1], shape=[%d,%d]} : %s[%d,%d]", m, k, dt, m, k)
	p("  %%h = mul(%%xn, %%gb) : %s[%d,%d]", dt, m, k)
	h := "%h"
	if norm == "layernorm_bias" {
		p("  %%bb = broadcast_in_dim(%%beta) {dims=[1], shape=[%d,%d]} : %s[%d,%d]", m, k, dt, m, k)
		p("  %%hb = add(%%h, %%bb) : %s[%d,%d]", dt, m, k)
		h = "%hb"
	}
	p("  %%y = dot_general(%s, %%w) {lhs_contract=[1], rhs_contract=[%d]} : %s[%d,%d]", h, rc, dt, m, n)
	p("  %%yb = broadcast_in_dim(%%b) {dims=[1], shape=[%d,%d]} : %s[%d,%d]", m, n, dt, m, n)
	p("  %%o = add(%%y, %%yb) : %s[%d,%d]", dt, m, n)
	p("  output out = %%o")
	p("}")
	return sb.String()
}

// TestGEMVRowPrologue: a norm fused into the GEMV equals the reference (the decomposed norm,
// then the product) for rows 1..gemv.MaxPrologueRows, K on and off the vector width and under
// one block's 256 threads, split K and not, both weight orders, f32/f16/bf16, LayerNorm with and
// without beta (its rows staged in shared memory) and RMSNorm; checkKernel assembles for sm_80 and sm_90 (no spills) and runs with
// memcheck, racecheck and synccheck. Above gemv.MaxUnstagedRows rows only a LayerNorm whose rows
// fit gemv.MaxStagedBytes is taken; others are refused: no template takes the kernel.
func TestGEMVRowPrologue(t *testing.T) {
	shapes := [][3]int{{1, 768, 768}, {2, 64, 130}, {3, 96, 250}, {4, 40, 257}, {4, 2048, 512}, {1, 33, 300}, {2, 64, 129}, {3, 48, 100},
		{5, 64, 256}, {6, 64, 129}, {8, 96, 768}, {7, 40, 1100}, {8, 40, 1100}, {4, 64, 2048}}
	if testing.Short() {
		shapes = shapes[:3]
	}
	for _, norm := range []string{"layernorm_bias", "layernorm", "rmsnorm"} {
		for _, dt := range []string{"f32", "f16", "bf16"} {
			for i, s := range shapes {
				m, n, k := s[0], s[1], s[2]
				kContig := i%2 == 1
				t.Run(fmt.Sprintf("%s_%s_%dx%dx%d_kcontig=%v", norm, dt, m, n, k, kContig), func(t *testing.T) {
					g := parse(t, normGEMV(norm, dt, m, n, k, kContig))
					kern := Kernel{Name: "k_" + norm, Graph: g}
					if m > gemv.MaxUnstagedRows && (norm == "rmsnorm" || 4*m*k > gemv.MaxStagedBytes) {
						if NormPrologue(g) {
							t.Fatalf("%d unstaged rows taken with a norm prologue, want at most %d", m, gemv.MaxUnstagedRows)
						}
						if _, _, err := Generate(kern, harnessTarget); err == nil {
							t.Fatal("generated, want an error: no template takes a norm over more rows")
						}
						return
					}
					cp, err := ContractionPlan(kern, harnessTarget)
					if err != nil {
						t.Fatal(err)
					}
					if cp.Kind != "gemv" {
						t.Fatalf("template %q, want gemv", cp.Kind)
					}
					text, _, err := Generate(kern, harnessTarget)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(text, "row prologue") {
						t.Fatal("no row prologue in the kernel")
					}
					// LayerNorm's variance reads the rows again: they are staged in shared
					// memory (gemv.StagedRows); RMSNorm's one reduction reads them once.
					want := norm != "rmsnorm"
					if staged := strings.Contains(text, "staged in shared memory"); staged != want {
						t.Errorf("rows staged in shared memory: %v, want %v", staged, want)
					}
					checkKernel(t, kern, inputsFor(g, uint64(m*n+k), 1), false)
				})
			}
		}
	}
}
