package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

func exampleKernels(t *testing.T, name string) []ptx.Kernel {
	t.Helper()
	for _, m := range examples.All() {
		if m.Name != name {
			continue
		}
		g, err := frontend.Build(m.Name, m.Model)
		if err != nil {
			t.Fatal(err)
		}
		res, err := passes.Run(g, passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return kernelsOf(res)
	}
	t.Fatalf("no example %s", name)
	return nil
}

// kernelsOf are the codegen kernels of a pipeline's result, as the compiler builds them.
func kernelsOf(res *passes.Result) []ptx.Kernel {
	var ks []ptx.Kernel
	for _, kn := range res.Kernels.Kernels {
		k := ptx.Kernel{Name: kn.Name, Graph: kn.Body, Shared: kn.SharedOffsets(), SharedBytes: int(kn.SharedBytes), InPlace: kn.InPlace}
		for _, s := range kn.Stages {
			k.Stages = append(k.Stages, ptx.Kernel{Name: s.Name, Graph: s.Body})
		}
		ks = append(ks, k)
	}
	return ks
}

// The rule on counters: the simulated warp instructions decide, with a 10% margin codegen/ptx
// keeps; an entry keeping fewer than half the SM's warps resident costs proportionally more,
// except in a launch of one block; without the simulator's counters ptxas's decide; without
// either, codegen/ptx's entry stays.
func TestChoose(t *testing.T) {
	sim := func(insts int64, warps int) *Counters {
		return &Counters{Simulated: true, Grid: [3]int{2, 1, 1}, WarpInsts: insts, Assembled: warps > 0, Warps: warps, SASS: 100}
	}
	static := func(warps, sass int) *Counters {
		return &Counters{Assembled: true, Warps: warps, SASS: sass, SimErr: errors.New("too large")}
	}
	for _, tc := range []struct {
		name     string
		p, n     *Counters
		oneBlock bool
		want     bool
	}{
		{"10% fewer instructions", sim(1000, 64), sim(900, 64), false, true},
		{"9% fewer instructions: a tie", sim(1000, 64), sim(910, 64), false, false},
		{"more instructions, fewer SASS", sim(1000, 64), &Counters{Simulated: true, Grid: [3]int{2, 1, 1}, WarpInsts: 1100, Assembled: true, Warps: 64, SASS: 10}, false, false},
		{"fewer warps above half: instructions alone", sim(1000, 64), sim(800, 32), false, true},
		{"fewer warps below half cost more", sim(1000, 64), sim(800, 16), false, false},
		{"one block: occupancy beside the point", sim(1000, 64), sim(800, 16), true, true},
		{"one block, more instructions", sim(1000, 16), sim(1200, 64), true, false},
		{"more warps below half pay off", sim(1000, 8), sim(1000, 32), false, true},
		{"no ptxas: instructions alone", sim(1000, 0), sim(850, 0), false, true},
		{"not simulated: more resident warps", static(32, 100), static(48, 200), false, true},
		{"not simulated: 10% fewer SASS", static(32, 100), static(32, 90), false, true},
		{"not simulated: fewer warps", static(32, 100), static(16, 10), false, false},
		{"neither simulated nor assembled", &Counters{}, &Counters{}, false, false},
	} {
		got, why := choose(tc.p, tc.n, "sm_80", tc.oneBlock)
		if got != tc.want || why == "" {
			t.Errorf("%s: nvvm %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}

// The sample of blocks a launch is measured on: at most n blocks, x first, never an empty dim.
func TestSampleGrid(t *testing.T) {
	for _, tc := range []struct{ grid, want [3]int }{
		{[3]int{1, 1, 1}, [3]int{1, 1, 1}},
		{[3]int{100, 1, 1}, [3]int{2, 1, 1}},
		{[3]int{1, 6, 4}, [3]int{1, 2, 1}},
		{[3]int{1, 1, 12}, [3]int{1, 1, 2}},
	} {
		if got := sampleGrid(tc.grid, 2); got != tc.want {
			t.Errorf("sampleGrid(%v, 2) = %v, want %v", tc.grid, got, tc.want)
		}
	}
}

// --backend auto: every kernel's entry comes from one producer, recorded in its launch; a
// kernel the NVVM producer refuses is codegen/ptx's; one both take is NVVM's exactly when the
// rule (choose) prefers it on the counters of the whole launch, each producer's entry assembled
// and simulated on its own: the sample Auto simulates leads to the choice the whole launch
// does. The examples hold the kernels static counts misjudged: layer norm (smaller SASS, more
// warp instructions in NVVM's), rnn's persistent kernel (one block: NVVM's more registers cost
// nothing) and softmax. The module holds each chosen entry once, assembles, and
// is the same from run to run.
func TestAutoChoosesByCounters(t *testing.T) {
	lib := libnvvm.Require(t)
	ptxas.Require(t)
	models := []string{"transformer", "rnn", "gpt"} // lstm's persistent kernel is rnn's template, 420 KB of PTX for ptxas
	if testing.Short() {
		models = models[:2]
	}
	for _, model := range models {
		t.Run(model, func(t *testing.T) {
			kernels := exampleKernels(t, model)
			a := &Auto{NVVM: &nvvm.Producer{LibPath: lib.Path}}
			text, launches, err := a.Module(kernels, ptx.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			res, err := ptxas.Assemble([]byte(text), "sm_80")
			if err != nil {
				t.Fatal(err)
			}
			nvvmUsed := 0
			for i, k := range kernels {
				l, c := launches[i], a.Choices[i]
				if l.Producer != c.Producer || c.Kernel != k.Name {
					t.Errorf("%s: launch producer %q, choice %+v", k.Name, l.Producer, c)
				}
				if res.Kernel(l.Entry) == nil {
					t.Errorf("%s: entry %s is not in the module", k.Name, l.Entry)
				}
				if n := strings.Count(text, ".entry "+l.Entry+"("); n != 1 {
					t.Errorf("%s: entry %s appears %d times", k.Name, l.Entry, n)
				}
				_, _, irErr := nvvm.IR([]ptx.Kernel{k}, ptx.Target{SM: 80})
				if irErr != nil {
					if l.Producer != "ptx" {
						t.Errorf("%s: refused by nvvm but made by %s", k.Name, l.Producer)
					}
					continue
				}
				one := []ptx.Kernel{k}
				emText, emL, err := ptx.Module(one, ptx.Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				nvText, nvL, err := NVVM{a.NVVM}.Module(one, ptx.Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				p := measureModule(emText, one, emL, "sm_80", 0, registersFirst)[emL[0].Entry]
				n := measureModule(nvText, one, nvL, "sm_80", 0, registersFirst)[nvL[0].Entry]
				if !p.Simulated || !n.Simulated {
					t.Fatalf("%s: not simulated: %v %v", k.Name, p.SimErr, n.SimErr)
				}
				g := emL[0].Grid
				pick, why := choose(p, n, "sm_80", g[0]*g[1]*g[2] == 1)
				want := "ptx"
				if pick {
					want = "nvvm"
					nvvmUsed++
				}
				if l.Producer != want {
					t.Errorf("%s: made by %s (%s), want %s (whole launch: %s)", k.Name, l.Producer, c.Why, want, why)
				}
			}
			again, _, err := a.Module(kernels, ptx.Target{SM: 80})
			if err != nil || again != text {
				t.Errorf("a second build differs (err %v)", err)
			}
			t.Logf("%d kernels, %d by nvvm", len(kernels), nvvmUsed)
		})
	}
}

// Without ptxas the simulated warp instructions alone decide (no occupancy), and the choice
// says so.
func TestAutoWithoutPtxas(t *testing.T) {
	lib := libnvvm.Require(t)
	t.Setenv("GCOMP_PTXAS", "/nonexistent/ptxas")
	kernels := exampleKernels(t, "transformer")
	a := &Auto{NVVM: &nvvm.Producer{LibPath: lib.Path}}
	_, launches, err := a.Module(kernels, ptx.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	measured := 0
	for i, k := range kernels {
		c := a.Choices[i]
		want := "ptx"
		if c.PTX != nil {
			measured++
			if c.PTX.Assembled || !c.PTX.Simulated || !c.NVVM.Simulated || !strings.Contains(c.Why, "no ptxas") {
				t.Errorf("%s: counters %+v / %+v (%s)", k.Name, c.PTX, c.NVVM, c.Why)
			}
			if 10*c.NVVM.WarpInsts <= 9*c.PTX.WarpInsts {
				want = "nvvm"
			}
		}
		if launches[i].Producer != want {
			t.Errorf("%s: %s (%s), want %s", k.Name, launches[i].Producer, c.Why, want)
		}
	}
	if measured == 0 {
		t.Error("no kernel was measured")
	}
}

// A sample allocates at most maxSimBytes of buffers: a kernel over larger ones is not
// simulated, says why, and Auto falls back to ptxas's counters.
func TestSampleBoundsBuffers(t *testing.T) {
	g, err := ir.Parse("big.gir", []byte(`graph big {
  input %x : f32[4096,4096]
  input %y : f32[4096,4096]
  %0 = add(%x, %y) : f32[4096,4096]
  output z = %0
}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kernels := kernelsOf(res)
	text, launches, err := ptx.Module(kernels, ptx.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	c := measureModule(text, kernels, launches, "sm_80", sampleBlocks, noAssembly)[launches[0].Entry]
	if c.Simulated || c.SimErr == nil || !strings.Contains(c.SimErr.Error(), "bytes of buffers") {
		t.Errorf("counters %+v", c)
	}
	if pick, why := choose(c, c, "sm_80", false); pick || !strings.Contains(why, "not simulated") {
		t.Errorf("choose: %v (%s)", pick, why)
	}
	// Auto judges such a kernel by ptxas's occupancy and both entries' SASS counts.
	lib := libnvvm.Require(t)
	ptxas.Require(t)
	a := &Auto{NVVM: &nvvm.Producer{LibPath: lib.Path}}
	if _, _, err := a.Module(kernels, ptx.Target{SM: 80}); err != nil {
		t.Fatal(err)
	}
	ch := a.Choices[0]
	if ch.PTX == nil || ch.PTX.SASS == 0 || ch.NVVM.SASS == 0 || !strings.Contains(ch.Why, "not simulated") || !strings.Contains(ch.Why, "SASS instructions") {
		t.Errorf("choice %+v, counters %+v / %+v", ch, ch.PTX, ch.NVVM)
	}
}
