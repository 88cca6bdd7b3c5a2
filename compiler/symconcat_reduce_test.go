package compiler_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// concatReduceCases put a concat along a symbolic dim past (in [0,37]) beside a reduction or a
// product: each case's body for the dtype, and the kernels the build must have (the concat's
// own, which writes a buffer, and the kernels reading it).
var concatReduceCases = []struct {
	name    string
	body    string
	kernels int
}{
	{"sum over rows", "  input %a : T[past,8]\n  input %b : T[1,8]\n  %0 = concat(%a, %b) {axis=0} : T[past+1,8]\n" +
		"  %1 = reduce_sum(%0) {axes=[1]} : T[past+1]\n  output y = %1\n", 2},
	{"max over rows of exp, neg before", "  input %a : T[past,8]\n  input %b : T[1,8]\n  %0 = neg(%b) : T[1,8]\n" +
		"  %1 = concat(%a, %0) {axis=0} : T[past+1,8]\n  %2 = exp(%1) : T[past+1,8]\n  %3 = reduce_max(%2) {axes=[1]} : T[past+1]\n  output y = %3\n", 2},
	{"softmax over the last axis", "  input %a : T[2,3,past]\n  input %b : T[2,3,1]\n  %0 = concat(%a, %b) {axis=2} : T[2,3,past+1]\n" +
		"  %1 = reduce_max(%0) {axes=[2]} : T[2,3]\n  %2 = broadcast_in_dim(%1) {dims=[0,1], shape=[2,3,38]} : T[2,3,past+1]\n" +
		"  %3 = sub(%0, %2) : T[2,3,past+1]\n  %4 = exp(%3) : T[2,3,past+1]\n  %5 = reduce_sum(%4) {axes=[2]} : T[2,3]\n" +
		"  %6 = broadcast_in_dim(%5) {dims=[0,1], shape=[2,3,38]} : T[2,3,past+1]\n  %7 = div(%4, %6) : T[2,3,past+1]\n  output y = %7\n", 2},
	{"mean over the concat axis", "  input %a : T[past,8]\n  input %b : T[1,8]\n  %0 = concat(%a, %b) {axis=0} : T[past+1,8]\n" +
		"  %c = constant() {dtype=T, shape=[], value=[1]} : T[]\n  %1 = broadcast_in_dim(%c) {shape=[38,8], dims=[]} : T[past+1,8]\n" +
		"  %2 = reduce_sum(%1) {axes=[0]} : T[8]\n  %3 = reduce_sum(%0) {axes=[0]} : T[8]\n  %4 = div(%3, %2) : T[8]\n  output m = %4\n  output present = %0\n", 2},
	{"row sum spread over a concat", "  input %z : T[past+1,8]\n  input %a : T[past,8]\n  input %b : T[1,8]\n" +
		"  %0 = reduce_sum(%z) {axes=[1]} : T[past+1]\n  %1 = tanh(%0) : T[past+1]\n  %2 = broadcast_in_dim(%1) {dims=[0], shape=[38,8]} : T[past+1,8]\n" +
		"  %3 = concat(%a, %b) {axis=0} : T[past+1,8]\n  %4 = add(%3, %2) : T[past+1,8]\n  output y = %4\n", 2},
	{"product's epilogue adds a concat", "  input %x : T[past+1,8]\n  input %w : T[8,4]\n  input %a : T[past,4]\n  input %b : T[1,4]\n" +
		"  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : T[past+1,4]\n  %1 = concat(%a, %b) {axis=0} : T[past+1,4]\n" +
		"  %2 = add(%0, %1) : T[past+1,4]\n  output y = %2\n", 2},
}

// A concat along a symbolic dim beside a reduction or a product (once refused: "its concat along
// a symbolic dim: it computes reduce_sum") is its own kernel, a fused concat writing a buffer
// that the reduction or the product's epilogue reads at the run's sizes: built once, run on the
// memchecked simulator at past 0, 1, 13, 31 and the bound 37 against the reference, in f32, f16
// and bf16, and bit for bit the static build's.
func TestSymbolicConcatReduced(t *testing.T) {
	for _, dt := range []ir.DType{ir.F32, ir.F16, ir.BF16} {
		for _, tc := range concatReduceCases {
			t.Run(fmt.Sprintf("%s_%s", dt, tc.name), func(t *testing.T) {
				src := "graph s {\n  dims { past in [0,37] }\n" + strings.ReplaceAll(tc.body, "T", dt.String()) + "}\n"
				g, err := ir.Parse("s.gir", []byte(src))
				if err != nil {
					t.Fatalf("%v\n%s", err, src)
				}
				res, err := compiler.Compile(g, compiler.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if n := len(res.Artifact.Plan.Kernels); n != tc.kernels {
					t.Errorf("%d kernels, want %d: the concat's and the one reading it", n, tc.kernels)
				}
				checkRows(t, g)
				checkStaticBits(t, g)
			})
		}
	}
}

// With --backend nvvm the same graphs build (the concat's kernel nvvm's copy or codegen/ptx's
// fused concat, the reduction or product nvvm's) and run as the ptx build does, in f32.
func TestSymbolicConcatReducedNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	for _, tc := range concatReduceCases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte("graph s {\n  dims { past in [0,37] }\n"+strings.ReplaceAll(tc.body, "T", "f32")+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if ks := checkNVVM(t, g, lib.Path); len(ks) != tc.kernels {
				t.Errorf("%d kernels, want %d", len(ks), tc.kernels)
			}
		})
	}
}

// What the split costs (docs/perf.md): the symbolic build launches the concat's kernel and the
// reduction's where the static build at the same sizes launches one kernel that reduces the
// concat as it reads it; their warp instructions on the simulator at past 1, 13 and the bound.
func TestSymbolicConcatReducedCost(t *testing.T) {
	for _, tc := range concatReduceCases[:3] {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte("graph s {\n  dims { past in [0,37] }\n"+strings.ReplaceAll(tc.body, "T", "f32")+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			p := load(t, g)
			for _, past := range []int64{1, 13, 37} {
				env := map[string]int64{"past": past}
				sg, err := ops.Instantiate(g, env)
				if err != nil {
					t.Fatal(err)
				}
				inputs, _, err := tensor.SeededValues(sg, 1)
				if err != nil {
					t.Fatal(err)
				}
				sym, err := p.Run(inputs)
				if err != nil {
					t.Fatal(err)
				}
				static, err := load(t, sg).Run(inputs)
				if err != nil {
					t.Fatal(err)
				}
				if len(sym.Kernels) != len(static.Kernels)+1 {
					t.Errorf("past %d: %d launches, the static build %d; want one more (the concat's)", past, len(sym.Kernels), len(static.Kernels))
				}
				last := func(ks []executor.KernelRun) executor.KernelRun { return ks[len(ks)-1] }
				t.Logf("past %d of 37: %d launches, %d warp instructions built once (reduction grid %v block %v); static %d, %d (grid %v block %v) (%.2f×)", past,
					len(sym.Kernels), warpInsts(sym.Kernels), last(sym.Kernels).Grid, last(sym.Kernels).Block, len(static.Kernels), warpInsts(static.Kernels),
					last(static.Kernels).Grid, last(static.Kernels).Block, float64(warpInsts(sym.Kernels))/float64(warpInsts(static.Kernels)))
			}
		})
	}
}

// warpInsts sums the simulator's warp instructions over a run's launches.
func warpInsts(ks []executor.KernelRun) int64 {
	var n int64
	for _, k := range ks {
		if k.Counters != nil {
			n += k.Counters.WarpInsts
		}
	}
	return n
}
