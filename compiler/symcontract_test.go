package compiler_test

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/ir"
)

// contractGraphs are batched products contracting a symbolic dim that is not the rows: a
// transformer's products outside attention, per batch element.
var contractGraphs = []struct{ name, body string }{
	{"xᵀ·y over seq from 0, static batch (FFMA)", "  dims { seq in [0,37] }\n  input %x : f32[2,seq,12]\n  input %y : f32[2,seq,20]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : f32[2,12,20]\n  output z = %0\n"},
	{"xᵀ·y over seq, symbolic batch, bias after (FFMA)", "  dims { b in [1,3], seq in [1,37] }\n  input %x : f32[b,seq,12]\n  input %y : f32[b,seq,20]\n  input %w : f32[20]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : f32[b,12,20]\n" +
		"  %1 = broadcast_in_dim(%w) {dims=[2], shape=[3,12,20]} : f32[b,12,20]\n  %2 = add(%0, %1) : f32[b,12,20]\n  output z = %2\n"},
	{"scores·V by hand, static batch (tensor cores)", "  dims { seq in [1,40] }\n  input %p : f16[2,12,seq]\n  input %v : f16[2,seq,16]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f16[2,12,16]\n  output z = %0\n"},
	{"scores·V by hand over heads, symbolic batch (FFMA)", "  dims { b in [1,3], seq in [1,29] }\n  input %p : f32[b,2,9,seq]\n  input %v : f32[b,2,seq,8]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[2]} : f32[b,2,9,8]\n  output z = %0\n"},
	{"pooling by matmul, the heads merged back (bf16 tensor cores)", "  dims { b in [1,3], seq in [1,24] }\n  input %q : bf16[b,seq,16]\n  input %vh : bf16[b,2,seq,8]\n" +
		"  %0 = transpose(%vh) {perm=[0,2,1,3]} : bf16[b,seq,2,8]\n  %1 = reshape(%0) {shape=[3,24,16]} : bf16[b,seq,16]\n" +
		"  %2 = dot_general(%q, %1) {lhs_batch=[0], lhs_contract=[1], rhs_batch=[0], rhs_contract=[1]} : bf16[b,16,16]\n  output z = %2\n"},
	{"scores·V by hand, t from 0 beside seq, static batch (FFMA)", "  dims { t in [0,140], seq in [1,37] }\n  input %p : f32[2,t,seq]\n  input %v : f32[2,seq,12]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,t,12]\n  output z = %0\n"},
	{"a self-attention's scores·V by hand, symbolic batch, bias after (FFMA)", "  dims { b in [1,3], seq in [1,29] }\n  input %p : f32[b,seq,seq]\n  input %v : f32[b,seq,8]\n  input %w : f32[8]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[b,seq,8]\n" +
		"  %1 = broadcast_in_dim(%w) {dims=[2], shape=[3,29,8]} : f32[b,seq,8]\n  %2 = add(%0, %1) : f32[b,seq,8]\n  output z = %2\n"},
	{"scores·V by hand over heads, t beside seq, symbolic batch (bf16 tensor cores)", "  dims { b in [1,2], t in [1,40], seq in [1,24] }\n  input %p : bf16[b,2,t,seq]\n  input %v : bf16[b,2,seq,16]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[2]} : bf16[b,2,t,16]\n  output z = %0\n"},
	// A symbolic free dim on the right (symcontract_rhs.go): q·kᵀ by hand, N the keys' rows.
	{"a self-attention's q·kᵀ by hand, symbolic batch (FFMA)", "  dims { b in [1,3], seq in [1,37] }\n  input %q : f32[b,seq,16]\n  input %k : f32[b,seq,16]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[b,seq,seq]\n  output z = %0\n"},
	{"q·kᵀ by hand over heads, t beside seq, scaled, symbolic batch (bf16 tensor cores)", "  dims { b in [1,2], t in [1,40], seq in [1,140] }\n  input %q : bf16[b,2,t,16]\n  input %k : bf16[b,2,seq,16]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : bf16[b,2,t,seq]\n" +
		"  %1 = neg(%0) : bf16[b,2,t,seq]\n  output z = %1\n"},
	{"x·xᵀ, one operand on both sides (FFMA)", "  dims { seq in [1,9] }\n  input %x : f32[2,seq,4]\n" +
		"  %0 = dot_general(%x, %x) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[2,seq,seq]\n  output y = %0\n"},
	{"q·kᵀ by hand, static queries, static batch (FFMA)", "  dims { seq in [0,140] }\n  input %q : f32[2,9,16]\n  input %k : f32[2,seq,16]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[2,9,seq]\n  output z = %0\n"},
	// Epilogues reading a tensor at the run's sizes: a residual added to scores·V, a mask to q·kᵀ.
	{"scores·V by hand, t beside seq, a residual added (FFMA)", "  dims { t in [1,140], seq in [1,37] }\n  input %p : f32[2,t,seq]\n  input %v : f32[2,seq,8]\n  input %r : f32[2,t,8]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,t,8]\n  %1 = add(%0, %r) : f32[2,t,8]\n  output z = %1\n"},
	{"a self-attention's q·kᵀ by hand, a mask added, symbolic batch (f16 tensor cores)", "  dims { b in [1,3], seq in [1,40] }\n  input %q : f16[b,seq,16]\n  input %k : f16[b,seq,16]\n  input %m : f16[b,seq,seq]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f16[b,seq,seq]\n  %1 = add(%0, %m) : f16[b,seq,seq]\n  output z = %1\n"},
	// Epilogues reading a tensor at the run's sizes through a broadcast (symcontract_bcast.go).
	{"a self-attention's q·kᵀ by hand, a mask broadcast over the heads added, symbolic batch (f16 tensor cores)", "  dims { b in [1,3], seq in [1,40] }\n  input %q : f16[b,2,seq,16]\n  input %k : f16[b,2,seq,16]\n  input %m : f16[b,1,seq,seq]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f16[b,2,seq,seq]\n" +
		"  %1 = broadcast_in_dim(%m) {dims=[0,1,2,3], shape=[3,2,40,40]} : f16[b,2,seq,seq]\n  %2 = add(%0, %1) : f16[b,2,seq,seq]\n  output z = %2\n"},
	{"q·kᵀ by hand over heads, a mask broadcast over the heads it lacks (FFMA)", "  dims { seq in [1,9] }\n  input %q : f32[2,2,5,16]\n  input %k : f32[2,2,seq,16]\n  input %m : f32[2,5,seq]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f32[2,2,5,seq]\n" +
		"  %1 = broadcast_in_dim(%m) {dims=[0,2,3], shape=[2,2,5,9]} : f32[2,2,5,seq]\n  %2 = add(%0, %1) : f32[2,2,5,seq]\n  output z = %2\n"},
	{"q·kᵀ by hand, a bias over the keys broadcast along the rows (FFMA)", "  dims { seq in [0,140] }\n  input %q : f32[2,9,16]\n  input %k : f32[2,seq,16]\n  input %w : f32[seq]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[2,9,seq]\n" +
		"  %1 = broadcast_in_dim(%w) {dims=[2], shape=[2,9,140]} : f32[2,9,seq]\n  %2 = add(%0, %1) : f32[2,9,seq]\n  output z = %2\n"},
	{"scores·V by hand, t beside seq, a per-row scale [t, 1] broadcast (FFMA)", "  dims { t in [1,140], seq in [1,37] }\n  input %p : f32[2,t,seq]\n  input %v : f32[2,seq,8]\n  input %s : f32[t,1]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,t,8]\n" +
		"  %1 = broadcast_in_dim(%s) {dims=[1,2], shape=[2,140,8]} : f32[2,t,8]\n  %2 = mul(%0, %1) : f32[2,t,8]\n  output z = %2\n"},
	{"q·kᵀ by hand over heads, t beside seq, a mask broadcast over batch and heads (bf16 tensor cores)", "  dims { b in [1,2], t in [1,40], seq in [1,140] }\n  input %q : bf16[b,2,t,16]\n  input %k : bf16[b,2,seq,16]\n  input %m : bf16[1,1,t,seq]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : bf16[b,2,t,seq]\n" +
		"  %1 = broadcast_in_dim(%m) {dims=[0,1,2,3], shape=[2,2,40,140]} : bf16[b,2,t,seq]\n  %2 = add(%0, %1) : bf16[b,2,t,seq]\n  output z = %2\n"},
	{"scores·V by hand over heads, t beside seq, a residual broadcast over the heads, symbolic batch (FFMA)", "  dims { b in [1,3], t in [1,20], seq in [1,17] }\n  input %p : f32[b,2,t,seq]\n  input %v : f32[b,2,seq,8]\n  input %r : f32[b,1,t,8]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[2]} : f32[b,2,t,8]\n" +
		"  %1 = broadcast_in_dim(%r) {dims=[0,1,2,3], shape=[3,2,20,8]} : f32[b,2,t,8]\n  %2 = add(%0, %1) : f32[b,2,t,8]\n  output z = %2\n"},
	// Epilogues reading a tensor at the run's sizes through other views of it, broadcasts among
	// them or not (symcontract_bcast.go): each element's address at the run's strides.
	{"q·kᵀ by hand over heads, a mask transposed before its broadcast over the heads (FFMA)", "  dims { seq in [1,9] }\n  input %q : f32[2,2,5,16]\n  input %k : f32[2,2,seq,16]\n  input %m : f32[2,seq,5]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f32[2,2,5,seq]\n" +
		"  %1 = transpose(%m) {perm=[0,2,1]} : f32[2,5,seq]\n  %2 = broadcast_in_dim(%1) {dims=[0,2,3], shape=[2,2,5,9]} : f32[2,2,5,seq]\n  %3 = add(%0, %2) : f32[2,2,5,seq]\n  output z = %3\n"},
	{"q·kᵀ by hand over heads, a bias broadcast to other sizes, then reshaped (FFMA)", "  dims { seq in [1,9] }\n  input %q : f32[2,2,5,16]\n  input %k : f32[2,2,seq,16]\n  input %w : f32[seq]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f32[2,2,5,seq]\n" +
		"  %1 = broadcast_in_dim(%w) {dims=[2], shape=[2,10,9]} : f32[2,10,seq]\n  %2 = reshape(%1) {shape=[2,2,5,9]} : f32[2,2,5,seq]\n  %3 = add(%0, %2) : f32[2,2,5,seq]\n  output z = %3\n"},
	{"scores·V by hand, a residual of other sizes reshaped through views (FFMA)", "  dims { t in [1,23], seq in [1,9] }\n  input %p : f32[2,t,seq]\n  input %v : f32[2,seq,8]\n  input %r : f32[2*t,8]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,t,8]\n  %1 = reshape(%r) {shape=[2,23,8]} : f32[2,t,8]\n  %2 = add(%0, %1) : f32[2,t,8]\n  output z = %2\n"},
	{"q·kᵀ by hand over heads, seq from 0, a mask sliced and transposed through views before its broadcast (FFMA)", "  dims { seq in [0,9] }\n  input %q : f32[2,2,5,16]\n  input %k : f32[2,2,seq,16]\n  input %m : f32[2,seq,7]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f32[2,2,5,seq]\n  %1 = slice(%m) {start=[0,0,1], limit=[2,9,6]} : f32[2,seq,5]\n" +
		"  %2 = transpose(%1) {perm=[0,2,1]} : f32[2,5,seq]\n  %3 = broadcast_in_dim(%2) {dims=[0,2,3], shape=[2,2,5,9]} : f32[2,2,5,seq]\n  %4 = add(%0, %3) : f32[2,2,5,seq]\n  output z = %4\n"},
	{"a self-attention's q·kᵀ by hand, a mask added transposed through views and as it is (FFMA)", "  dims { seq in [1,9] }\n  input %q : f32[2,seq,16]\n  input %k : f32[2,seq,16]\n  input %m : f32[2,seq,seq]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[2]} : f32[2,seq,seq]\n" +
		"  %1 = transpose(%m) {perm=[0,2,1]} : f32[2,seq,seq]\n  %2 = add(%0, %1) : f32[2,seq,seq]\n  %3 = add(%2, %m) : f32[2,seq,seq]\n  output z = %3\n"},
	{"scores·V by hand, t from 0 beside seq, a residual [2, 8, t] transposed through views (FFMA)", "  dims { t in [0,23], seq in [1,9] }\n  input %p : f32[2,t,seq]\n  input %v : f32[2,seq,8]\n  input %r : f32[2,8,t]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,t,8]\n  %1 = transpose(%r) {perm=[0,2,1]} : f32[2,t,8]\n  %2 = add(%0, %1) : f32[2,t,8]\n  output z = %2\n"},
	{"a self-attention's q·kᵀ by hand, a mask transposed before its broadcast over the heads, symbolic batch (f16 tensor cores)", "  dims { b in [1,3], seq in [1,40] }\n  input %q : f16[b,2,seq,16]\n  input %k : f16[b,2,seq,16]\n  input %m : f16[b,seq,seq]\n" +
		"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f16[b,2,seq,seq]\n" +
		"  %1 = transpose(%m) {perm=[0,2,1]} : f16[b,seq,seq]\n  %2 = broadcast_in_dim(%1) {dims=[0,2,3], shape=[3,2,40,40]} : f16[b,2,seq,seq]\n  %3 = add(%0, %2) : f16[b,2,seq,seq]\n  output z = %3\n"},
	{"scores·V by hand over heads, t beside seq, a residual with its heads inside transposed through views, symbolic batch (bf16 tensor cores)", "  dims { b in [1,2], t in [1,40], seq in [1,24] }\n  input %p : bf16[b,2,t,seq]\n  input %v : bf16[b,2,seq,16]\n  input %r : bf16[b,t,2,16]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[2]} : bf16[b,2,t,16]\n" +
		"  %1 = transpose(%r) {perm=[0,2,1,3]} : bf16[b,2,t,16]\n  %2 = add(%0, %1) : bf16[b,2,t,16]\n  output z = %2\n"},
	// A symbolic batch dim after a static one (symcontract_after.go in both producers): grid.z
	// split into batch coordinates at the run's sizes. At 1 and the bound the bound's split
	// addresses the same elements, so each batch runs at a size between too (13, or 2 of [2,3]).
	{"xᵀ·y over seq, a static batch then a symbolic one, a bias after (FFMA)", "  dims { b in [1,14], seq in [1,5] }\n  input %x : f32[2,b,seq,4]\n  input %y : f32[2,b,seq,4]\n  input %w : f32[4]\n" +
		"  %0 = dot_general(%x, %y) {lhs_batch=[0,1], lhs_contract=[2], rhs_batch=[0,1], rhs_contract=[2]} : f32[2,b,4,4]\n" +
		"  %1 = broadcast_in_dim(%w) {dims=[3], shape=[2,14,4,4]} : f32[2,b,4,4]\n  %2 = add(%0, %1) : f32[2,b,4,4]\n  output z = %2\n"},
	{"scores·V by hand, heads static, the batch symbolic between (FFMA)", "  dims { b in [2,3], seq in [1,5] }\n  input %p : f32[2,b,3,5,seq]\n  input %v : f32[2,b,3,seq,6]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0,1,2], lhs_contract=[4], rhs_batch=[0,1,2], rhs_contract=[3]} : f32[2,b,3,5,6]\n  output z = %0\n"},
	{"scores·V by hand, a static batch then a symbolic one (f16 tensor cores)", "  dims { b in [1,14], seq in [1,16] }\n  input %p : f16[2,b,12,seq]\n  input %v : f16[2,b,seq,16]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[2]} : f16[2,b,12,16]\n  output z = %0\n"},
	{"scores·V by hand, V's columns symbolic too (FFMA)", "  dims { e in [1,9], seq in [1,9] }\n  input %p : f32[2,5,seq]\n  input %v : f32[2,seq,e]\n" +
		"  %0 = dot_general(%p, %v) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[1]} : f32[2,5,e]\n  output z = %0\n"},
}

// One build of each runs on the memchecked simulator at 1, primes and the bound (smaller first),
// within tolerance of the reference interpreter, and bit for bit the static build's at those
// sizes: the k loop is the static kernel's at the run's K.
func TestSymbolicContract(t *testing.T) { checkBuiltOnce(t, contractGraphs) }

// The products contracting a symbolic dim the templates do not take yet are refused naming the
// value and why.
func TestSymbolicContractRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"a mask computed before its transpose", "  dims { seq in [1,9] }\n  input %q : f32[2,2,5,16]\n  input %k : f32[2,2,seq,16]\n  input %m : f32[2,seq,5]\n" +
			"  %0 = dot_general(%q, %k) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[3]} : f32[2,2,5,seq]\n" +
			"  %1 = neg(%m) : f32[2,seq,5]\n  %2 = transpose(%1) {perm=[0,2,1]} : f32[2,5,seq]\n  %3 = broadcast_in_dim(%2) {dims=[0,2,3], shape=[2,2,5,9]} : f32[2,2,5,seq]\n  %4 = add(%0, %3) : f32[2,2,5,seq]\n  output z = %4\n",
			"input %m : f32[2,seq,5] has 2*seq rows, %2 = transpose(%1) {perm=[0,2,1]} : f32[2,5,seq] has 10*seq"},
		{"a symbolic N over two free dims", "  dims { seq in [1,9] }\n  input %q : f32[2,5,16]\n  input %k : f32[2,seq,3,16]\n" +
			"  %0 = dot_general(%q, %k) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[0], rhs_contract=[3]} : f32[2,5,seq,3]\n  output z = %0\n",
			"has a symbolic free dim (3*seq) over 2 dims of its right operand"},
		{"batch dims not leading", "  dims { seq in [1,9] }\n  input %x : f32[2,4,seq]\n  input %y : f32[seq,2,4]\n" +
			"  %0 = dot_general(%x, %y) {lhs_batch=[0], lhs_contract=[2], rhs_batch=[1], rhs_contract=[0]} : f32[2,4,4]\n  output z = %0\n",
			"in a product batched over dims that do not lead its operands"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, "graph s {\n"+tc.body+"}\n", tc.want)
		})
	}
}

// With --backend nvvm these products are codegen/nvvm's own on FFMA (its symcontract.go and
// symcontract_rhs.go) and on tensor cores (its symcontract_mma.go), a symbolic batch, heads, a
// symbolic M or N and an epilogue reading a tensor of the result's sizes, or one of the run's
// sizes through a broadcast or another view (symcontract_bcast.go), beside too: no entry is
// codegen/ptx's (nvvm.Lacks names nothing), and each build runs at the same sizes bit for bit the
// codegen/ptx build's.
func TestSymbolicContractNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	for _, tc := range contractGraphs {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range checkNVVM(t, g, lib.Path) {
				if k.Producer == "ptx" {
					t.Errorf("kernel %s: codegen/ptx's entry (%v), want the NVVM producer's", k.Name, k.Notes)
				}
			}
		})
	}
}
