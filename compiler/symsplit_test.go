package compiler_test

import (
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// splitFolds reduce every element of a symbolic operand, rows included, to one value, at least
// 32768 elements at the bound: the split full reduction over the run's count (codegen/ptx's
// symsplit.go). runs are the sizes, in increasing order (rows past a run never written, so
// memcheck sees a read of them); split is the smallest count of rows whose static build splits
// too, from which the two agree bit for bit.
var splitFolds = []struct {
	name, body string
	runs       []map[string]int64
	split      int64
}{
	{"loss sum f32", "  dims { n in [0,20000] }\n  input %x : f32[n,4]\n  %0 = reduce_sum(%x) {axes=[0,1]} : f32[]\n  output s = %0\n",
		[]map[string]int64{{"n": 0}, {"n": 1}, {"n": 8191}, {"n": 8209}, {"n": 16384}, {"n": 20000}}, 8192},
	// Two splits of different block counts share the plan's scratch area, the second one's
	// counter where the first one's partials were: each must leave it all zero.
	{"two losses", "  dims { n in [1,20000] }\n  input %y : f32[n,16]\n  input %x : f32[n,4]\n" +
		"  %0 = mul(%y, %y) : f32[n,16]\n  %1 = reduce_sum(%0) {axes=[0,1]} : f32[]\n  %2 = reduce_sum(%x) {axes=[0,1]} : f32[]\n" +
		"  output q = %1\n  output s = %2\n",
		[]map[string]int64{{"n": 1}, {"n": 4099}, {"n": 8209}, {"n": 20000}}, 8192},
	{"squared sum f16, kept", "  dims { n in [1,9000] }\n  input %x : f16[n,8]\n  %0 = mul(%x, %x) : f16[n,8]\n" +
		"  %1 = reduce_sum(%0) {axes=[0,1], keepdims=true} : f16[1,1]\n  output s = %1\n",
		[]map[string]int64{{"n": 1}, {"n": 4099}, {"n": 8192}, {"n": 9000}}, 4096},
	{"max bf16 over two dims, scaled", "  dims { b in [1,4], t in [1,700] }\n  input %x : bf16[b,t,16]\n  %0 = reduce_max(%x) {axes=[0,1,2]} : bf16[]\n" +
		"  %c = constant() {dtype=bf16, shape=[], value=[2]} : bf16[]\n  %1 = mul(%0, %c) : bf16[]\n  output m = %1\n",
		[]map[string]int64{{"b": 1, "t": 1}, {"b": 2, "t": 523}, {"b": 3, "t": 683}, {"b": 4, "t": 700}}, 2048},
}

// TestSymbolicSplitReduction: one build of each graph launches the bound's split at the bound
// (several blocks, a scratch buffer), runs on the memchecked simulator at 0 or 1, primes, a
// multiple of a block's share and the bound within tolerance of the reference, its grid the
// static one's, and bit for bit the static build wherever that splits too.
func TestSymbolicSplitReduction(t *testing.T) {
	for _, tc := range splitFolds {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			k := res.Artifact.Plan.Kernels[len(res.Artifact.Plan.Kernels)-1]
			if k.Grid[0] < 2 || k.Work == nil || k.Work.Tile != 2048 || k.Work.MaxBlocks != k.Grid[0] {
				t.Fatalf("kernel %s grid %v work %+v: want the bound's split, a block per 2048 elements", k.Name, k.Grid, k.Work)
			}
			rows := func(env map[string]int64) int64 {
				n := int64(1)
				for _, v := range env {
					n *= v
				}
				return n
			}
			checkRowsAt(t, g, compiler.Options{}, tc.runs, 64, func(env map[string]int64, inputs, _, outputs map[string]*tensor.Tensor) {
				if rows(env) < tc.split {
					return
				}
				for name, o := range runStatic(t, g, env, inputs) {
					if string(o.Bytes()) != string(outputs[name].Bytes()) {
						t.Errorf("sizes %v: output %s differs from the static build's", env, name)
					}
				}
			})
		})
	}
}
