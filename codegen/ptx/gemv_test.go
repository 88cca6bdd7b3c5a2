package ptx

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// gemvCases are decoding's products: the weight stored [K,N] (x·W, GPT-2's Conv1D) or [N,K]
// (x·Wᵀ, Llama's Linear), with and without an epilogue, and attention's batched probs·V.
var gemvCases = []struct{ name, src string }{
	{"kn", `graph g {
  input %x : T[M,K]
  param %w : T[K,N]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : T[M,N]
  output y = %0
}`},
	{"nk", `graph g {
  input %x : T[M,K]
  param %w : T[N,K]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : T[M,N]
  output y = %0
}`},
	{"kn_bias_tanh_residual", `graph g {
  input %x : T[M,K]
  param %w : T[K,N]
  param %b : T[N]
  input %r : T[M,N]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : T[M,N]
  %1 = broadcast_in_dim(%b) {dims=[1], shape=[M,N]} : T[M,N]
  %2 = add(%0, %1) : T[M,N]
  %3 = tanh(%2) : T[M,N]
  %4 = add(%3, %r) : T[M,N]
  output y = %4
  output pre = %2
}`},
	{"nk_bias_relu", `graph g {
  input %x : T[M,K]
  param %w : T[N,K]
  param %b : T[N]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : T[M,N]
  %1 = broadcast_in_dim(%b) {dims=[1], shape=[M,N]} : T[M,N]
  %2 = add(%0, %1) : T[M,N]
  %3 = relu(%2) : T[M,N]
  output y = %3
}`},
	{"batched_probs_v", `graph g {
  input %p : T[3,M,K]
  input %v : T[3,K,N]
  %0 = dot_general(%p, %v) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : T[3,M,N]
  output y = %0
}`},
}

// TestGEMV: the GEMV template equals the reference for rows 1..8, K and N off the tile, vector
// and split sizes, both weight orders, f32/f16/bf16, with epilogues; checkKernel assembles for
// sm_80 and sm_90 (no spills), runs with memcheck, racecheck and synccheck, and a split launch
// twice (the same bits, the scratch left zero).
func TestGEMV(t *testing.T) {
	// K·N ≥ gemv.MinWeight (4096); N = 1 splits K alone.
	shapes := [][3]int{{1, 1, 4100}, {1, 768, 300}, {2, 33, 130}, {3, 7, 600}, {4, 64, 520}, {5, 100, 100}, {8, 40, 257}}
	if testing.Short() {
		shapes = shapes[:3]
	}
	for _, c := range gemvCases {
		for _, dt := range []string{"f32", "f16", "bf16"} {
			for _, s := range shapes {
				m, n, k := s[0], s[1], s[2]
				if c.name == "batched_probs_v" && n*k > 20000 {
					continue
				}
				t.Run(fmt.Sprintf("%s_%s_%dx%dx%d", c.name, dt, m, n, k), func(t *testing.T) {
					g := parse(t, strings.ReplaceAll(instantiateMNK(c.src, m, n, k), "T[", dt+"["))
					kern := Kernel{Name: "k_" + c.name, Graph: g}
					cp, err := ContractionPlan(kern, harnessTarget)
					if err != nil {
						t.Fatal(err)
					}
					if cp.Kind != "gemv" {
						t.Fatalf("template %q, want gemv", cp.Kind)
					}
					res := checkKernel(t, kern, inputsFor(g, uint64(m*n+k), 1), false)
					if res == nil {
						return
					}
					for _, regs := range res.regs {
						if regs > 255 {
							t.Errorf("%d registers", regs)
						}
					}
				})
			}
		}
	}
}

// TestGEMVPlan: the launch is the plan's (blocks enough to fill the GPU where K allows), the
// weight streams through 128-bit loads in both orders when its sizes allow it, and a split launch
// takes its ticket with an integer atomic and no float atomics.
func TestGEMVPlan(t *testing.T) {
	cases := []struct {
		name              string
		m, n, k           int
		dt                string
		grid              [3]int
		load              string // the weight's load
		split, scratchArg bool
	}{
		{"kn", 1, 768, 3072, "f32", [3]int{24, 10, 1}, `ld\.global\.v4\.f32`, true, true},
		{"nk", 1, 768, 3072, "bf16", [3]int{24, 10, 1}, `ld\.global\.v4\.b32`, true, true},
		{"kn", 2, 50257, 768, "f16", [3]int{1571, 1, 1}, `ld\.global\.b16`, false, false}, // N odd: element loads
		{"nk", 8, 4096, 64, "f32", [3]int{128, 1, 1}, `ld\.global\.v4\.f32`, false, false},
	}
	for _, c := range cases {
		src := gemvCases[0].src
		if c.name == "nk" {
			src = gemvCases[1].src
		}
		g := parse(t, strings.ReplaceAll(instantiateMNK(src, c.m, c.n, c.k), "T[", c.dt+"["))
		text, l, err := Generate(Kernel{Name: "k", Graph: g}, harnessTarget)
		if err != nil {
			t.Fatal(err)
		}
		p := gemv.New(c.m, c.n, c.k, 1)
		if l.Grid != c.grid || l.Grid != p.Grid() || l.Block != [3]int{gemv.Threads, 1, 1} {
			t.Errorf("%s %dx%dx%d: launch %v %v, want grid %v (plan %v)", c.name, c.m, c.n, c.k, l.Grid, l.Block, c.grid, p.Grid())
		}
		if !regexp.MustCompile(c.load).MatchString(text) {
			t.Errorf("%s %s: no %s", c.name, c.dt, c.load)
		}
		hasScratch := len(l.Params) > 0 && l.Params[len(l.Params)-1].Kind == ArgScratch
		if hasScratch != c.scratchArg || (hasScratch && l.Params[len(l.Params)-1].Bytes != p.ScratchBytes()) {
			t.Errorf("%s: scratch argument %v, want %v of %d bytes", c.name, l.Params, c.scratchArg, p.ScratchBytes())
		}
		if strings.Contains(text, "atom.global.add.u32") != c.split || strings.Contains(text, "atom.global.add.f") {
			t.Errorf("%s: ticket atomics %v, want %v; float atomics must not occur", c.name, !c.split, c.split)
		}
		again, _, _ := Generate(Kernel{Name: "k", Graph: g}, harnessTarget)
		if again != text {
			t.Errorf("%s: two generations differ", c.name)
		}
	}
}

// TestGEMVLeaves: products the GEMV template does not take keep their templates: more than 8
// rows, a weight under gemv.MinWeight elements (launch-bound: the tiled templates' small
// shapes), an operand computed inside the kernel (direct), f64.
func TestGEMVLeaves(t *testing.T) {
	for _, c := range []struct{ name, src, kind string }{
		{"nine_rows", `graph g {
  input %x : f32[9,512]
  input %w : f32[512,64]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[9,64]
  output y = %0
}`, "ffma"},
		{"small_weight", `graph g {
  input %x : f16[2,32]
  input %w : f16[32,127]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f16[2,127]
  output y = %0
}`, "tensor core"},
		{"computed_lhs", `graph g {
  input %x : f32[2,512]
  input %w : f32[512,64]
  %0 = sin(%x) : f32[2,512]
  %1 = dot_general(%0, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[2,64]
  output y = %1
}`, "direct"},
		{"f64", `graph g {
  input %x : f64[2,512]
  input %w : f64[512,64]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f64[2,64]
  output y = %0
}`, "direct"},
	} {
		g := parse(t, c.src)
		cp, err := ContractionPlan(Kernel{Name: "k", Graph: g}, harnessTarget)
		if err != nil || cp.Kind != c.kind {
			t.Errorf("%s: template %q (%v), want %s", c.name, cp.Kind, err, c.kind)
		}
	}
}

// TestGEMVSplitOrders: a split GEMV gives the same bits whichever block finishes last (blocks
// in order, reversed, in a seeded random order) and has no race on global memory: the partials
// are handed to the last block through a fence and an integer ticket.
func TestGEMVSplitOrders(t *testing.T) {
	for _, c := range []struct {
		src     string
		m, n, k int
	}{{gemvCases[2].src, 2, 40, 1030}, {gemvCases[3].src, 3, 64, 700}} {
		g := parse(t, strings.ReplaceAll(instantiateMNK(c.src, c.m, c.n, c.k), "T[", "f32["))
		kern := Kernel{Name: "k", Graph: g}
		text, l, err := Generate(kern, harnessTarget)
		if err != nil {
			t.Fatal(err)
		}
		if l.Grid[1] < 2 {
			t.Fatalf("%dx%dx%d: grid %v does not split K", c.m, c.n, c.k, l.Grid)
		}
		checkBlockOrders(t, text, "k", l, g, inputsFor(g, 7, 1))
	}
}

// checkBlockOrders launches kernel (entry text, launch l) in order, reversed and in a seeded
// random order, with the global race check on: every order must give the same bits.
func checkBlockOrders(t *testing.T, text, kernel string, l Launch, g *ir.Graph, in map[string]*tensor.Tensor) {
	t.Helper()
	run, err := launchSim(t, ".version 7.8\n.target sm_80\n.address_size 64\n"+text, kernel, l, g, in)
	if err != nil {
		t.Fatal(err)
	}
	read := func() string {
		buf := make([]byte, g.Outputs[0].Value.Type.Bytes())
		if err := run.dev.Read(run.outAddr[g.Outputs[0].Name], buf); err != nil {
			t.Fatal(err)
		}
		return string(buf)
	}
	first := read()
	for _, order := range []sim.BlockOrder{sim.InOrder, sim.Reverse, sim.RandomOrder} {
		cfg := run.cfg
		cfg.Order, cfg.Seed, cfg.RaceGlobal = order, 3, true
		if _, err := run.m.Launch(kernel, cfg, run.args...); err != nil {
			t.Fatalf("%v: %v", order, err)
		}
		if read() != first {
			t.Errorf("%s: blocks %v give other bits", g.Name, order)
		}
	}
}
