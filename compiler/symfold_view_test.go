package compiler_test

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// foldViewGraphs are weight gradients whose operand merges attention's heads back through a
// transpose and a reshape (dq, dk or dv before the projection's dW = dYᵀ·X): the k coordinate
// (the rows) steps over seq inside a head and over the heads between batch elements, so
// codegen/ptx's generic copier reads it through the views at the run's sizes.
var foldViewGraphs = []struct{ name, body string }{
	{"heads merged, batch leading (FFMA)", "  dims { batch in [1,31] }\n  input %dq : f32[batch,2,5,4]\n  input %x : f32[batch,5,8]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[batch,5,2,4]\n  %1 = reshape(%0) {shape=[31,5,8]} : f32[batch,5,8]\n" +
		"  %2 = dot_general(%1, %x) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[8,8]\n  output dw = %2\n"},
	{"heads merged on the right (FFMA)", "  dims { batch in [1,31] }\n  input %x : f32[batch,5,6]\n  input %dv : f32[batch,3,5,4]\n" +
		"  %0 = transpose(%dv) {perm=[0,2,1,3]} : f32[batch,5,3,4]\n  %1 = reshape(%0) {shape=[31,5,12]} : f32[batch,5,12]\n" +
		"  %2 = dot_general(%x, %1) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[6,12]\n  output dw = %2\n"},
	{"heads merged, rows flattened (tensor cores)", "  dims { batch in [1,31] }\n  input %dk : f16[batch,2,5,8]\n  input %x : f16[batch,5,16]\n" +
		"  %0 = transpose(%dk) {perm=[0,2,1,3]} : f16[batch,5,2,8]\n  %1 = reshape(%0) {shape=[155,16]} : f16[batch*5,16]\n" +
		"  %2 = reshape(%x) {shape=[155,16]} : f16[batch*5,16]\n" +
		"  %3 = dot_general(%1, %2) {lhs_contract=[0], rhs_contract=[0]} : f16[16,16]\n  output dw = %3\n"},
	// seq is not the buffer's leading dim: a head's rows start seq·4 apart at the run's sizes, not
	// at the bound's.
	{"heads merged, the sequence not leading (FFMA)", "  dims { seq in [1,13] }\n  input %dq : f32[2,2,seq,4]\n  input %x : f32[2,seq,8]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[2,seq,2,4]\n  %1 = reshape(%0) {shape=[2,13,8]} : f32[2,seq,8]\n" +
		"  %2 = dot_general(%1, %x) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[8,8]\n  output dw = %2\n"},
	{"heads merged, the sequence not leading (tensor cores)", "  dims { seq in [1,13] }\n  input %x : f16[2,seq,16]\n  input %dv : f16[2,2,seq,8]\n" +
		"  %0 = transpose(%dv) {perm=[0,2,1,3]} : f16[2,seq,2,8]\n  %1 = reshape(%0) {shape=[2,13,16]} : f16[2,seq,16]\n" +
		"  %2 = dot_general(%x, %1) {lhs_contract=[0,1], rhs_contract=[0,1]} : f16[16,16]\n  output dw = %2\n"},
	{"the batch only as K (FFMA)", "  dims { batch in [1,8] }\n  input %dq : f32[batch,2,5,4]\n  input %x : f32[batch,5,8]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[batch,5,2,4]\n  %1 = reshape(%0) {shape=[8,5,8]} : f32[batch,5,8]\n" +
		"  %2 = dot_general(%1, %x) {lhs_contract=[0], rhs_contract=[0]} : f32[5,8,5,8]\n  output dw = %2\n"},
	{"both operands merged (FFMA)", "  dims { batch in [1,8] }\n  input %a : f32[batch,2,7,3]\n  input %b : f32[batch,2,7,5]\n" +
		"  %0 = transpose(%a) {perm=[0,2,1,3]} : f32[batch,7,2,3]\n  %1 = reshape(%0) {shape=[8,7,6]} : f32[batch,7,6]\n" +
		"  %2 = transpose(%b) {perm=[0,2,1,3]} : f32[batch,7,2,5]\n  %3 = reshape(%2) {shape=[8,7,10]} : f32[batch,7,10]\n" +
		"  %4 = dot_general(%1, %3) {lhs_contract=[0,1], rhs_contract=[0,1]} : f32[6,10]\n  output dw = %4\n"},
	// One head: k's weight gradient reads kᵀ's gradient back through the transpose that made
	// kᵀ, which moves seq.
	{"kᵀ's gradient through the transpose moving seq (FFMA)", "  dims { batch in [1,4], seq in [1,7] }\n  input %dkt : f32[batch,1,8,seq]\n  input %x : f32[batch,1,seq,8]\n" +
		"  %0 = transpose(%dkt) {perm=[0,1,3,2]} : f32[batch,1,seq,8]\n" +
		"  %1 = dot_general(%0, %x) {lhs_contract=[0,1,2], rhs_contract=[0,1,2]} : f32[8,8]\n  output dw = %1\n"},
	{"kᵀ's gradient through the transpose moving seq, on the right (tensor cores)", "  dims { seq in [0,13] }\n  input %x : f16[2,seq,16]\n  input %dkt : f16[2,16,seq]\n" +
		"  %0 = transpose(%dkt) {perm=[0,2,1]} : f16[2,seq,16]\n" +
		"  %1 = dot_general(%x, %0) {lhs_contract=[0,1], rhs_contract=[0,1]} : f16[16,16]\n  output dw = %1\n"},
	{"kᵀ's gradient through the transpose moving seq (bf16 tensor cores)", "  dims { seq in [1,13] }\n  input %dkt : bf16[3,16,seq]\n  input %x : bf16[3,seq,16]\n" +
		"  %0 = transpose(%dkt) {perm=[0,2,1]} : bf16[3,seq,16]\n" +
		"  %1 = dot_general(%0, %x) {lhs_contract=[0,1], rhs_contract=[0,1]} : bf16[16,16]\n  output dw = %1\n"},
	// Strided at the bound by a symbolic dim: a transpose of [2, seq] steps seq elements along
	// its free dim, so the run's strides are not the bound's; the copier reads it through the
	// transpose at the run's sizes (codegen/ptx's symFoldGeneric).
	{"a transpose of [2, seq] (FFMA)", "  dims { seq in [1,13] }\n  input %a : f32[2,seq]\n  input %x : f32[seq,8]\n" +
		"  %0 = transpose(%a) {perm=[1,0]} : f32[seq,2]\n" +
		"  %1 = dot_general(%0, %x) {lhs_contract=[0], rhs_contract=[0]} : f32[2,8]\n  output dw = %1\n"},
	{"a transpose of [16, seq] on the right (tensor cores)", "  dims { seq in [1,13] }\n  input %x : f16[seq,16]\n  input %a : f16[16,seq]\n" +
		"  %0 = transpose(%a) {perm=[1,0]} : f16[seq,16]\n" +
		"  %1 = dot_general(%x, %0) {lhs_contract=[0], rhs_contract=[0]} : f16[16,16]\n  output dw = %1\n"},
	// Batched folds (per-head weight gradients with separate per-head projections): per batch
	// element j, the rows contracted with b's row j; the batch dims are static, the rows are K.
	{"batched over heads merged, the rows leading (FFMA)", "  dims { seq in [1,37] }\n  input %a : f32[seq,2,4,8]\n  input %b : f32[seq,4,16]\n" +
		"  %0 = transpose(%a) {perm=[0,2,1,3]} : f32[seq,4,2,8]\n  %1 = reshape(%0) {shape=[37,4,16]} : f32[seq,4,16]\n" +
		"  %2 = dot_general(%1, %b) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f32[4,16,16]\n  output dw = %2\n"},
	{"batched over heads merged, the rows leading (tensor cores)", "  dims { seq in [1,40] }\n  input %a : f16[seq,2,4,8]\n  input %b : f16[seq,4,16]\n" +
		"  %0 = transpose(%a) {perm=[0,2,1,3]} : f16[seq,4,2,8]\n  %1 = reshape(%0) {shape=[40,4,16]} : f16[seq,4,16]\n" +
		"  %2 = dot_general(%1, %b) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f16[4,16,16]\n  output dw = %2\n"},
	{"batched per head through a transpose (FFMA)", "  dims { seq in [1,13] }\n  input %a : f32[6,seq,3]\n  input %b : f32[seq,6,5]\n" +
		"  %0 = transpose(%a) {perm=[1,0,2]} : f32[seq,6,3]\n" +
		"  %1 = dot_general(%0, %b) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f32[6,3,5]\n  output dw = %1\n"},
	{"batched per head through a transpose (tensor cores)", "  dims { seq in [1,40] }\n  input %a : f16[4,seq,16]\n  input %b : f16[seq,4,16]\n" +
		"  %0 = transpose(%a) {perm=[1,0,2]} : f16[seq,4,16]\n" +
		"  %1 = dot_general(%0, %b) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f16[4,16,16]\n  output dw = %1\n"},
	{"batched over two static dims, seq from 0 (FFMA)", "  dims { seq in [0,11] }\n  input %x : f32[seq,2,3,4]\n  input %y : f32[seq,2,3,5]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[1,2], lhs_contract=[0], rhs_batch=[1,2], rhs_contract=[0]} : f32[2,3,4,5]\n  output dw = %0\n"},
	{"batched per head over batch and seq rows (FFMA)", "  dims { batch in [1,3], seq in [1,7] }\n  input %x : f32[batch,seq,2,4]\n  input %dy : f32[batch,seq,2,6]\n" +
		"  %0 = dot_general(%x, %dy) {lhs_batch=[2], lhs_contract=[0,1], rhs_batch=[2], rhs_contract=[0,1]} : f32[2,4,6]\n  output dw = %0\n"},
	{"batched per head, buffers (FFMA)", "  dims { seq in [1,9] }\n  input %x : f32[seq,2,4]\n  input %y : f32[seq,2,4]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[1], lhs_contract=[0], rhs_batch=[1], rhs_contract=[0]} : f32[2,4,4]\n  output dw = %0\n"},
}

// One build of each runs on the memchecked simulator at the bound, 1 and primes (smaller first),
// within tolerance of the reference interpreter and bit for bit the static build's at those
// sizes: the fold takes the run's rows through the views in the static kernel's order.
func TestSymbolicFoldViews(t *testing.T) { checkBuiltOnce(t, foldViewGraphs) }

// checkBuiltOnce runs checkRows and checkStaticBits on each graph (named, its body).
func checkBuiltOnce(t *testing.T, graphs []struct{ name, body string }) {
	for _, tc := range graphs {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, g)
			checkStaticBits(t, g)
		})
	}
}
