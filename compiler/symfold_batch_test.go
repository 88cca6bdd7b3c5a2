package compiler_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// foldBatchGraphs are folds of the rows batched over a symbolic dim (symfold_batch.go): per-head
// weight gradients whose heads, or a batch beside the rows, follow the sizes. The result's rows
// are the batch; grid.z follows it, and the copier takes the batch coordinate with the strides
// of the run's sizes.
var foldBatchGraphs = []struct{ name, body string }{
	{"a fold of the rows batched over a symbolic dim, buffers (FFMA)", "  dims { h in [1,4], seq in [1,9] }\n  input %x : f32[seq,h,4]\n  input %y : f32[seq,h,4]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f32[h,4,4]\n  output z = %0\n"},
	{"a fold of the rows through views batched over a symbolic dim (FFMA)", "  dims { h in [1,4], seq in [1,9] }\n  input %a : f32[h,seq,3]\n  input %b : f32[seq,h,5]\n" +
		"  %0 = transpose(%a) {perm=[1,0,2]} : f32[seq,h,3]\n" +
		"  %1 = dot_general(%0, %b) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f32[h,3,5]\n  output z = %1\n"},
	{"a fold of the rows batched over a symbolic dim (f16 tensor cores)", "  dims { h in [1,4], seq in [1,40] }\n  input %x : f16[seq,h,16]\n  input %y : f16[seq,h,16]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f16[h,16,16]\n  output z = %0\n"},
	{"a fold of the rows through views batched over a symbolic dim (bf16 tensor cores)", "  dims { h in [1,3], seq in [1,24] }\n  input %a : bf16[h,seq,16]\n  input %b : bf16[seq,h,16]\n" +
		"  %0 = transpose(%a) {perm=[1,0,2]} : bf16[seq,h,16]\n" +
		"  %1 = dot_general(%0, %b) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : bf16[h,16,16]\n  output z = %1\n"},
	// kᵀ's gradient per head read back through the transpose that made it: K, the rows, is
	// contiguous in the buffer and at primes not a whole number of 16-byte chunks.
	{"a fold of the rows through a transpose making K contiguous, batched over a symbolic dim (f16 tensor cores)", "  dims { h in [1,3], seq in [1,24] }\n  input %dkt : f16[h,16,seq]\n  input %x : f16[seq,h,16]\n" +
		"  %0 = transpose(%dkt) {perm=[2,0,1]} : f16[seq,h,16]\n" +
		"  %1 = dot_general(%0, %x) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f16[h,16,16]\n  output dw = %1\n"},
	// Attention's [batch, heads, seq, d] gradient read with the rows leading: per batch element
	// and head, the rows folded; the batch symbolic, the heads static after it.
	{"batched over a symbolic batch and static heads, from [batch, heads, seq, d] (FFMA)", "  dims { b in [1,3], seq in [1,7] }\n  input %dq : f32[b,2,seq,4]\n  input %x : f32[seq,b,2,6]\n" +
		"  %0 = transpose(%dq) {perm=[2,0,1,3]} : f32[seq,b,2,4]\n" +
		"  %1 = dot_general(%0, %x) {lhs_batch=[1,2], lhs_contract=[0], rhs_batch=[1,2], rhs_contract=[0]} : f32[b,2,4,6]\n  output dw = %1\n"},
	// A symbolic batch dim after a static one: grid.z split at the run's sizes
	// (symcontract_after.go in both producers). At 1 and the bound the bound's split addresses
	// the same elements, so each runs at a size between too (13, or 2 of [2,3]).
	{"batched over static heads then a symbolic dim (FFMA)", "  dims { h in [1,14], seq in [1,5] }\n  input %x : f32[seq,2,h,4]\n  input %y : f32[seq,2,h,4]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[1,2], lhs_contract=[0], rhs_batch=[1,2], rhs_contract=[0]} : f32[2,h,4,4]\n  output z = %0\n"},
	{"batched over static heads then a symbolic dim, through views (f16 tensor cores)", "  dims { h in [1,14], seq in [1,16] }\n  input %a : f16[2,h,seq,16]\n  input %b : f16[seq,2,h,16]\n" +
		"  %0 = transpose(%a) {perm=[2,0,1,3]} : f16[seq,2,h,16]\n" +
		"  %1 = dot_general(%0, %b) {lhs_batch=[1,2], lhs_contract=[0], rhs_batch=[1,2], rhs_contract=[0]} : f16[2,h,16,16]\n  output dw = %1\n"},
	{"batched over static heads, a symbolic dim, static groups (FFMA)", "  dims { h in [2,3], seq in [1,5] }\n  input %x : f32[seq,2,h,3,4]\n  input %y : f32[seq,2,h,3,5]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[1,2,3], lhs_contract=[0], rhs_batch=[1,2,3], rhs_contract=[0]} : f32[2,h,3,4,5]\n  output z = %0\n"},
	{"batched over a symbolic dim, an epilogue squaring it (FFMA)", "  dims { h in [1,3], seq in [1,11] }\n  input %x : f32[seq,h,5]\n  input %y : f32[seq,h,3]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f32[h,5,3]\n  %1 = mul(%0, %0) : f32[h,5,3]\n  output z = %1\n"},
	{"batched over a symbolic dim, runs of no rows and no heads (FFMA)", "  dims { h in [0,3], seq in [0,11] }\n  input %x : f32[seq,h,5]\n  input %y : f32[seq,h,3]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f32[h,5,3]\n  output z = %0\n"},
}

// One build of each runs on the memchecked simulator at 1, primes and the bound (smaller
// first), within tolerance of the reference interpreter and bit for bit the static build's at
// those sizes.
func TestSymbolicFoldBatch(t *testing.T) { checkBuiltOnce(t, foldBatchGraphs) }

// With a static batch dim after the symbolic one, an epilogue reading a tensor broadcast over the
// batch is refused: its rows (up to the last symbolic dim) are not the product's (the batch's).
func TestSymbolicFoldBatchRefused(t *testing.T) {
	checkRefused(t, "graph s {\n  dims { h in [1,4], seq in [1,9] }\n  input %x : f32[seq,2,h,3,4]\n  input %y : f32[seq,2,h,3,4]\n  input %w : f32[4]\n"+
		"  %0 = dot_general(%x, %y) {lhs_batch=[1,2,3], lhs_contract=[0], rhs_batch=[1,2,3], rhs_contract=[0]} : f32[2,h,3,4,4]\n"+
		"  %1 = broadcast_in_dim(%w) {dims=[4], shape=[2,4,3,4,4]} : f32[2,h,3,4,4]\n  %2 = add(%0, %1) : f32[2,h,3,4,4]\n  output z = %2\n}\n",
		"has 2*h rows")
}

// The tensor-core rows run on tensor cores, as the static build at the bound does.
func TestSymbolicFoldBatchMMA(t *testing.T) {
	for _, tc := range foldBatchGraphs {
		if !strings.HasSuffix(tc.name, "tensor cores)") {
			continue
		}
		g, err := ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		bound := map[string]int64{}
		for _, d := range g.Dims {
			bound[d.Name] = int64(d.Hi)
		}
		sg, err := ops.Instantiate(g, bound)
		if err != nil {
			t.Fatal(err)
		}
		for build, bg := range map[string]*ir.Graph{"symbolic": g, "static": sg} {
			res, err := compiler.Compile(bg, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res.Artifact.PTX), "mma.sync") {
				t.Errorf("%s: no mma.sync in the %s build", tc.name, build)
			}
		}
	}
}

// With --backend nvvm each is codegen/nvvm's own (its symcontract.go takes the fold, as
// codegen/ptx's does), with codegen/ptx's launch, and runs at the same sizes bit for bit the
// codegen/ptx build's (checkNVVM).
func TestSymbolicFoldBatchNVVM(t *testing.T) { checkOwnNVVM(t, foldBatchGraphs) }
