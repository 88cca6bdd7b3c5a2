package ptx

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/examples/lstm"
	"github.com/gcomp/gcomp/examples/rnn"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/tensor"
)

// kernelOf is the codegen view of a kernel of the pass pipeline, as the compiler builds it.
func kernelOf(kn *passes.Kernel, name string) Kernel {
	k := Kernel{Name: name, Graph: kn.Body, Shared: kn.SharedOffsets(), SharedBytes: int(kn.SharedBytes), InPlace: kn.InPlace}
	for _, s := range kn.Stages {
		k.Stages = append(k.Stages, Kernel{Name: s.Name, Graph: s.Body})
	}
	return k
}

// Persistent kernels, from the examples and from small chains: each assembles for sm_80 and
// sm_90, runs in the simulator with memcheck, racecheck and synccheck on and matches the
// reference interpreter on the kernel's body; the module is the same bytes every time; the
// values kept in shared memory are never stored to global memory.
func TestPersistentKernels(t *testing.T) {
	model := func(m func(*frontend.Builder)) func(t *testing.T) *ir.Graph {
		return func(t *testing.T) *ir.Graph {
			g, err := frontend.Build("m", m)
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
	}
	gir := func(src string) func(t *testing.T) *ir.Graph {
		return func(t *testing.T) *ir.Graph { return parse(t, "graph t {\n"+src+"\n}\n") }
	}
	const steps = `
  input %x : f32[4,16]
  param %w : f32[16,16]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  %1 = tanh(%0) : f32[4,16]
  %2 = dot_general(%1, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  %3 = tanh(%2) : f32[4,16]
  %4 = dot_general(%3, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  %5 = add(%4, %1) : f32[4,16]
  %6 = dot_general(%5, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  output h1 = %1
  output y = %6`
	// chain is three linear layers, weights [out, in] as nn.Linear keeps them (contracted along
	// their rows: the lanes of a warp split K), lhs [batch..., B, K]; batch dims, when given,
	// are batch dims of the contractions too.
	chain := func(dt string, batch string, b, k, n int) func(t *testing.T) *ir.Graph {
		dims := func(x, y int) string { return fmt.Sprintf("%s[%s%d,%d]", dt, batch, x, y) }
		attrs := "lhs_contract=[1], rhs_contract=[1]"
		if batch != "" {
			attrs = "lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2]"
		}
		act := "tanh"
		if dt == "i32" {
			act = "neg" // integers wrap: the same sums in any order
		}
		return gir(fmt.Sprintf(`
  input %%x : %[1]s
  param %%w : %[2]s
  param %%v : %[3]s
  %%0 = dot_general(%%x, %%w) {%[6]s} : %[4]s
  %%1 = %[7]s(%%0) : %[4]s
  %%2 = dot_general(%%1, %%v) {%[6]s} : %[5]s
  %%3 = %[7]s(%%2) : %[5]s
  %%4 = dot_general(%%3, %%w) {%[6]s} : %[4]s
  output y = %%4`, dims(b, k), dims(n, k), dims(k, n), dims(b, n), dims(b, k), attrs, act))
	}
	for _, tc := range []struct {
		name    string
		graph   func(t *testing.T) *ir.Graph
		opt     passes.FusionOptions
		kernels int  // in all
		stages  int  // of the persistent kernel
		split   bool // its contractions split K over the lanes of a warp
	}{
		{"lstm", model(lstm.Model), passes.FusionOptions{}, 1, 46, true},
		{"rnn", model(rnn.Model), passes.FusionOptions{}, 2, 3, true},
		// Lane-split contractions: K not a multiple of 32, element counts not a multiple of the
		// 8 warps nor of the group size (the last group clamps), groups inside rows.
		{"split K=40", chain("f32", "", 3, 40, 20), passes.FusionOptions{}, 1, 3, true},
		{"split K<32", chain("f32", "", 3, 12, 20), passes.FusionOptions{}, 1, 3, true},
		{"split K>32·3", chain("f32", "", 2, 100, 72), passes.FusionOptions{}, 1, 3, true},
		{"split in rows", chain("f32", "", 4, 64, 64), passes.FusionOptions{}, 1, 3, true},
		{"split batch dims", chain("f32", "2,", 3, 36, 24), passes.FusionOptions{}, 1, 3, true},
		{"split bf16", chain("bf16", "", 3, 40, 20), passes.FusionOptions{}, 1, 3, true},
		{"split i32", chain("i32", "", 3, 40, 20), passes.FusionOptions{}, 1, 3, true},
		// Loop stages only: a broadcast keeps exp, then tanh∘log, out of the next kernel.
		{"elementwise", gir(`
  input %x : f32[8]
  %0 = exp(%x) : f32[8]
  %1 = broadcast_in_dim(%0) {dims=[0], shape=[8,8]} : f32[8,8]
  %2 = tanh(%1) : f32[8,8]
  %3 = log(%2) : f32[8,8]
  %4 = broadcast_in_dim(%3) {dims=[0,1], shape=[8,8,100]} : f32[8,8,100]
  %5 = neg(%4) : f32[8,8,100]
  output y = %5`), passes.FusionOptions{}, 1, 3, false},
		// Stages large enough for vector groups: 128-bit loads of a value in shared memory
		// through a broadcast, and a matmul reading the 32 KB result from shared memory.
		{"vector groups", gir(`
  input %x : f32[2048]
  param %w : f32[2048,2]
  %0 = exp(%x) : f32[2048]
  %1 = broadcast_in_dim(%0) {dims=[1], shape=[4,2048]} : f32[4,2048]
  %2 = tanh(%1) : f32[4,2048]
  %3 = dot_general(%2, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,2]
  output y = %3`), passes.FusionOptions{}, 1, 3, false},
		// Matmul stages; h1 is an output and read by the next step and the residual add, so it
		// is stored to global memory and kept in shared memory until its last reader.
		{"matmuls, an output inside", gir(steps), passes.FusionOptions{}, 1, 4, false},
		// The flops bound cuts the run after three steps; the fourth is a kernel of its own.
		{"cut by the budget", gir(steps), passes.FusionOptions{PersistFlops: 6400}, 2, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := passes.Run(tc.graph(t), passes.Options{Fusion: tc.opt, VerifyEach: true})
			if err != nil {
				t.Fatal(err)
			}
			ks := res.Kernels.Kernels
			if len(ks) != tc.kernels || ks[0].Kind != passes.Persistent || len(ks[0].Stages) != tc.stages {
				t.Fatalf("want %d kernels, the first persistent with %d stages:\n%s", tc.kernels, tc.stages, res.Kernels)
			}
			for i, kn := range ks {
				k := kernelOf(kn, kn.Name)
				r := checkKernel(t, k, inputsFor(k.Graph, uint64(i), 1), false)
				if r == nil || kn.Kind != passes.Persistent {
					continue
				}
				entry, l, err := Generate(k, Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				if again, _, _ := Generate(k, Target{SM: 80}); again != entry {
					t.Error("two generations differ")
				}
				if l.Grid != [3]int{1, 1, 1} || l.Block != [3]int{persistThreads, 1, 1} {
					t.Errorf("launch %v×%v, want one block of %d threads", l.Grid, l.Block, persistThreads)
				}
				if got := strings.Count(entry, "bar.sync"); got != len(kn.Stages)-1 {
					t.Errorf("%d barriers for %d stages", got, len(kn.Stages))
				}
				// Global stores go only through the output parameters, each loaded once.
				outputs := 0
				for _, a := range l.Params {
					if a.Kind == ArgOutput {
						outputs++
					}
				}
				if outputs != len(kn.Writes) {
					t.Errorf("%d output parameters for %d buffers written", outputs, len(kn.Writes))
				}
				if len(kn.Shared) > 0 && !regexp.MustCompile(`(?m)^\tld\.shared\.`).MatchString(entry) {
					t.Error("no stage reads shared memory")
				}
				// f32 matmul stages accumulate with fma.rn.f32: no f64 in an f32 recurrence.
				if tc.name == "lstm" && (regexp.MustCompile(`\.f64\s`).MatchString(entry) || !strings.Contains(entry, "fma.rn.f32")) {
					t.Error("lstm's kernel computes in f64 or has no fma.rn.f32")
				}
				// The weights [in, out] of the steps are read coalesced by the per-element fold.
				if got := strings.Contains(entry, "shfl.sync.bfly.b32"); got != tc.split {
					t.Errorf("shuffles in the kernel: %v, want %v", got, tc.split)
				}
				if tc.name == "vector groups" && !strings.Contains(entry, "ld.shared.v4.f32") {
					t.Error("no vector load from shared memory")
				}
			}
		})
	}
}

// Without the barriers between stages, the simulator's racecheck sees a stage read what the
// previous one writes: the barriers are what makes the shared values safe.
func TestPersistentNeedsBarriers(t *testing.T) {
	g, err := frontend.Build("lstm", lstm.Model)
	if err != nil {
		t.Fatal(err)
	}
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := kernelOf(res.Kernels.Kernels[0], "k0_persistent")
	text, launches, err := Module([]Kernel{k}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	text = strings.ReplaceAll(text, "\tbar.sync 0;\n", "")
	zeros := map[string]*tensor.Tensor{}
	for _, v := range k.Graph.Inputs() {
		zeros[v.Name] = tensor.New(v.Type)
	}
	_, err = launchSim(t, text, k.Name, launches[0], k.Graph, zeros)
	if err == nil || !strings.Contains(err.Error(), "race") {
		t.Errorf("got %v, want a race report", err)
	}
}

// A malformed persistent kernel is a clear error, never a panic or wrong code.
func TestPersistentErrors(t *testing.T) {
	g := parse(t, `graph t {
  input %x : f32[4,16]
  %0 = exp(%x) : f32[4,16]
  %1 = neg(%0) : f32[4,16]
  output y = %1
}`)
	stage := func(src string) Kernel { return Kernel{Name: "s", Graph: parse(t, "graph s {\n"+src+"\n}\n")} }
	exp := stage("  input %x : f32[4,16]\n  %0 = exp(%x) : f32[4,16]\n  output t0 = %0")
	neg := stage("  input %t0 : f32[4,16]\n  %0 = neg(%t0) : f32[4,16]\n  output y = %0")
	sum := stage("  input %t0 : f32[4,16]\n  %0 = reduce_sum(%t0) {axes=[1], keepdims=true} : f32[4,1]\n  %1 = broadcast_in_dim(%0) {dims=[0,1], shape=[4,16]} : f32[4,16]\n  output y = %1")
	for _, tc := range []struct {
		name string
		k    Kernel
		want string
	}{
		{"ok", Kernel{Graph: g, Stages: []Kernel{exp, neg}, Shared: map[string]int{"t0": 0}, SharedBytes: 256}, ""},
		{"value lost", Kernel{Graph: g, Stages: []Kernel{exp, neg}, SharedBytes: 256}, "neither a kernel output nor in shared memory"},
		{"unknown read", Kernel{Graph: g, Stages: []Kernel{neg}}, "neither a kernel input nor in shared memory"},
		{"misaligned", Kernel{Graph: g, Stages: []Kernel{exp, neg}, Shared: map[string]int{"t0": 8}, SharedBytes: 512}, "not 16-byte aligned"},
		{"outside", Kernel{Graph: g, Stages: []Kernel{exp, neg}, Shared: map[string]int{"t0": 0}, SharedBytes: 128}, "outside 128 bytes"},
		{"too much shared memory", Kernel{Graph: g, Stages: []Kernel{exp, neg}, Shared: map[string]int{"t0": 0}, SharedBytes: 64 << 10}, "at most 49152"},
		{"no outputs", Kernel{Graph: g, Stages: []Kernel{exp, stage("  input %t0 : f32[4,16]")}, Shared: map[string]int{"t0": 0}, SharedBytes: 256}, "has no outputs"},
		{"reduction stage", Kernel{Graph: g, Stages: []Kernel{exp, sum}, Shared: map[string]int{"t0": 0}, SharedBytes: 256}, "reduction cannot be a stage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.k.Name = "k0_persistent"
			_, _, err := Generate(tc.k, Target{SM: 80})
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
