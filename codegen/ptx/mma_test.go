package ptx

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// f16 and bf16 matmuls run on tensor cores (mma.sync m16n8k16, f32 accumulators).
func TestMatmulHalf(t *testing.T) {
	cases := []struct{ name, src string }{
		{"kn", matmulCases[0].src},
		{"linear_bias_relu", matmulCases[1].src},
		{"transposed_lhs", `graph g {
  input %a : f32[K,M]
  input %b : f32[K,N]
  %0 = dot_general(%a, %b) {lhs_contract=[0], rhs_contract=[0]} : f32[M,N]
  %1 = cast(%0) {to=f32} : f32[M,N]
  output y = %1
}`},
		{"batched", `graph g {
  input %q : f32[3,M,K]
  input %k : f32[3,N,K]
  %0 = dot_general(%q, %k) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2]} : f32[3,M,N]
  output y = %0
}`},
	}
	// {7, 9, 13}: odd contiguous dims take 2-byte element copies instead of cp.async.
	shapes := [][3]int{{8, 8, 8}, {16, 8, 16}, {130, 72, 40}, {64, 200, 96}, {6, 10, 6}, {7, 9, 13}}
	for _, dt := range []string{"f16", "bf16"} {
		for _, c := range cases {
			for _, s := range shapes {
				t.Run(fmt.Sprintf("%s_%s_%dx%dx%d", dt, c.name, s[0], s[1], s[2]), func(t *testing.T) {
					src := strings.ReplaceAll(instantiateMNK(c.src, s[0], s[1], s[2]), "f32", dt)
					g := parse(t, src)
					k := Kernel{Name: "k_" + c.name + "_" + dt, Graph: g}
					checkMMA(t, checkKernel(t, k, inputsFor(g, uint64(s[0]+s[2]), 1), false))
				})
			}
		}
	}
}

func TestMatmulHalfAsm(t *testing.T) {
	g := parse(t, strings.ReplaceAll(instantiateMNK(matmulCases[0].src, 256, 256, 256), "f32", "f16"))
	text, _, err := Generate(Kernel{Name: "k_mm_f16", Graph: g}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32`, `ldmatrix\.sync\.aligned\.m8n8\.x4`, `cp\.async\.cg\.shared\.global .*, 16,`} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("missing %s", re)
		}
	}
	// The main loop (between its label and the epilogue) is mma, ldmatrix and cp.async: no
	// scalar shared or global loads.
	loop := text[strings.Index(text, "$L_k_loop"):strings.Index(text, "// epilogue")]
	if regexp.MustCompile(`ld\.(global|shared)\.`).MatchString(loop) {
		t.Error("plain loads in the f16 main loop")
	}
}

// With TF32 set, f32 products whose operands have a contiguous dim run on tensor cores
// (mma.sync m16n8k8 tf32) and stay within the tf32 tolerance, 5e-3: k-contiguous
// operands (x·wᵀ) through ldmatrix, [K,N] and [K,M] ones through ld.shared.b32 fragments, all
// without bank conflicts; K need not be a multiple of 4 (4-byte copies).
func TestMatmulTF32(t *testing.T) {
	harnessTarget = Target{SM: 80, TF32: true}
	t.Cleanup(func() { harnessTarget = Target{SM: 80} })
	for _, c := range []int{1, 0, 2} {
		for _, s := range [][3]int{{8, 8, 8}, {130, 72, 40}, {64, 200, 96}, {5, 9, 12}, {7, 9, 13}} {
			t.Run(fmt.Sprintf("%s_%dx%dx%d", matmulCases[c].name, s[0], s[1], s[2]), func(t *testing.T) {
				g := parse(t, instantiateMNK(matmulCases[c].src, s[0], s[1], s[2]))
				k := Kernel{Name: "k_tf32", Graph: g}
				text, l, err := Generate(k, harnessTarget)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(text, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") || !strings.Contains(text, "cvt.rna.tf32.f32") {
					t.Error("no tf32 mma")
				}
				if len(l.Notes) != 0 || strings.Contains(text, "fallback") {
					t.Errorf("fallback noted: %q", l.Notes)
				}
				res := checkKernel(t, k, inputsFor(g, uint64(s[0]), 1), false)
				if res != nil && res.stats.SharedBankConflicts != 0 {
					t.Errorf("%d bank conflicts", res.stats.SharedBankConflicts)
				}
			})
		}
	}
	// An operand with no contiguous dim (every other element of each row) keeps exact FFMA,
	// and says so in the kernel header and the launch.
	g := parse(t, `graph g {
  input %a : f32[64,64]
  input %b : f32[32,16]
  %0 = slice(%a) {start=[0,0], limit=[64,64], stride=[2,2]} : f32[32,32]
  %1 = dot_general(%0, %b) {lhs_contract=[1], rhs_contract=[0]} : f32[32,16]
  output y = %1
}`)
	text, l, _ := Generate(Kernel{Name: "k_strided", Graph: g}, harnessTarget)
	if strings.Contains(text, "mma.sync") || !strings.Contains(text, "// tf32 fallback to FFMA: an operand has no contiguous dim") || len(l.Notes) != 1 {
		t.Errorf("strided: want FFMA with a fallback note, got notes %q", l.Notes)
	}
}

// The tensor-core epilogue stages each warp's accumulators through shared memory, so a warp
// stores whole rows of 32 columns: 16-bit results fill whole sectors (direct stores from the
// mma layout write 4 bytes per thread and half of each sector: 50%).
func TestMatmulHalfStores(t *testing.T) {
	for _, dt := range []string{"f16", "bf16"} {
		t.Run(dt, func(t *testing.T) {
			src := strings.ReplaceAll(instantiateMNK(matmulCases[1].src, 128, 256, 64), "f32", dt)
			g := parse(t, src)
			res := checkKernel(t, Kernel{Name: "k_linear_" + dt, Graph: g}, inputsFor(g, 4, 1), false)
			if res == nil {
				return
			}
			st := res.stats
			if eff := float64(st.GlobalStoreBytes) / float64(32*st.GlobalStoreSectors); eff < 0.99 {
				t.Errorf("stores %.0f%% coalesced", 100*eff)
			}
			if st.SharedBankConflicts != 0 {
				t.Errorf("%d bank conflicts", st.SharedBankConflicts)
			}
		})
	}
}

// Operands read through views that are not strided (heads merged back by transpose and
// reshape, as attention's output projection reads them) run on tensor cores too, copied at the
// addresses their views give (16-byte chunks where the heads align them, else element by
// element): k-contiguous (A) and free-contiguous (B) ones, f16, bf16 and tf32, within tolerance
// and free of bank conflicts.
func TestMatmulMMAViews(t *testing.T) {
	cases := []struct{ name, src string }{
		{"merged_heads_lhs", `graph g {
  input %h : f32[2,M,K]
  param %w : f32[N,K2]
  %0 = transpose(%h) {perm=[1,0,2]} : f32[M,2,K]
  %1 = reshape(%0) {shape=[M,K2]} : f32[M,K2]
  %2 = dot_general(%1, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[M,N]
  output y = %2
}`},
		{"merged_heads_rhs", `graph g {
  input %x : f32[M,K2]
  input %v : f32[2,K2,N]
  %0 = transpose(%v) {perm=[1,0,2]} : f32[K2,2,N]
  %1 = reshape(%0) {shape=[K2,N2]} : f32[K2,N2]
  %2 = dot_general(%x, %1) {lhs_contract=[1], rhs_contract=[0]} : f32[M,N2]
  %3 = relu(%2) : f32[M,N2]
  output y = %3
}`},
	}
	for _, prec := range []string{"tf32", "f16", "bf16"} {
		for _, c := range cases {
			for _, s := range [][3]int{{8, 8, 8}, {130, 72, 40}, {7, 9, 13}, {64, 100, 96}} {
				t.Run(fmt.Sprintf("%s_%s_%dx%dx%d", prec, c.name, s[0], s[1], s[2]), func(t *testing.T) {
					if testing.Short() && prec == "bf16" {
						t.Skip("-short: bf16 takes the f16 path")
					}
					src := strings.NewReplacer("K2", fmt.Sprint(2*s[2]), "N2", fmt.Sprint(2*s[1])).Replace(c.src)
					src = instantiateMNK(src, s[0], s[1], s[2])
					mma := "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
					if prec == "tf32" {
						harnessTarget = Target{SM: 80, TF32: true}
						t.Cleanup(func() { harnessTarget = Target{SM: 80} })
					} else {
						src = strings.ReplaceAll(src, "f32", prec)
						mma = "mma.sync.aligned.m16n8k16.row.col.f32." + prec
					}
					g := parse(t, src)
					k := Kernel{Name: "k_" + c.name, Graph: g}
					text, l, err := Generate(k, harnessTarget)
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(text, mma) || len(l.Notes) != 0 {
						t.Errorf("no %s, or notes %q", mma, l.Notes)
					}
					checkMMA(t, checkKernel(t, k, inputsFor(g, uint64(s[0]+s[2]), 1), false))
				})
			}
		}
	}
}

// checkMMA holds a checked tensor-core kernel to ≤ 128 registers and no bank conflicts.
func checkMMA(t *testing.T, res *result) {
	t.Helper()
	if res == nil {
		return
	}
	for arch, r := range res.regs {
		if r > 128 {
			t.Errorf("%s: %d registers; more than 128 halves the occupancy", arch, r)
		}
	}
	if res.stats.SharedBankConflicts != 0 {
		t.Errorf("%d shared-memory bank conflicts", res.stats.SharedBankConflicts)
	}
}
