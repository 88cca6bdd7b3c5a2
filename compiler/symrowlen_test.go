package compiler_test

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/ir"
)

// rowLengthGraphs reduce a symbolic last dim: unfused attention's softmax over the keys and its
// gradient, the rows batch·t (or batch·h·t) and their length seq both following the sizes.
var rowLengthGraphs = []struct{ name, body string }{
	{"softmax over the keys of [b, t, seq]", "  dims { b in [1,3], t in [1,9], seq in [1,32] }\n  input %x : f32[b,t,seq]\n" +
		"  %0 = reduce_max(%x) {axes=[2], keepdims=true} : f32[b,t,1]\n  %1 = broadcast_in_dim(%0) {dims=[0,1,2], shape=[3,9,32]} : f32[b,t,seq]\n" +
		"  %2 = sub(%x, %1) : f32[b,t,seq]\n  %3 = exp(%2) : f32[b,t,seq]\n  %4 = reduce_sum(%3) {axes=[2], keepdims=true} : f32[b,t,1]\n" +
		"  %5 = broadcast_in_dim(%4) {dims=[0,1,2], shape=[3,9,32]} : f32[b,t,seq]\n  %6 = div(%3, %5) : f32[b,t,seq]\n  output y = %6\n"},
	{"a self-attention's softmax over heads, scaled (seq from 0)", "  dims { b in [1,2], seq in [0,29] }\n  input %x : f32[b,2,seq,seq]\n" +
		"  %k = constant() {dtype=f32, shape=[], value=[0.5]} : f32[]\n  %c = broadcast_in_dim(%k) {dims=[], shape=[2,2,29,29]} : f32[b,2,seq,seq]\n  %s = mul(%x, %c) : f32[b,2,seq,seq]\n" +
		"  %0 = reduce_max(%s) {axes=[3], keepdims=true} : f32[b,2,seq,1]\n  %1 = broadcast_in_dim(%0) {dims=[0,1,2,3], shape=[2,2,29,29]} : f32[b,2,seq,seq]\n" +
		"  %2 = sub(%s, %1) : f32[b,2,seq,seq]\n  %3 = exp(%2) : f32[b,2,seq,seq]\n  %4 = reduce_sum(%3) {axes=[3], keepdims=true} : f32[b,2,seq,1]\n" +
		"  %5 = broadcast_in_dim(%4) {dims=[0,1,2,3], shape=[2,2,29,29]} : f32[b,2,seq,seq]\n  %6 = div(%3, %5) : f32[b,2,seq,seq]\n  output y = %6\n"},
	{"row sums of static rows [3, seq]", "  dims { seq in [0,19] }\n  input %x : f32[3,seq]\n" +
		"  %0 = exp(%x) : f32[3,seq]\n  %1 = reduce_sum(%0) {axes=[1]} : f32[3]\n  output y = %1\n"},
	{"a per-row tensor of static rows broadcast along seq", "  dims { seq in [1,13] }\n  input %x : f32[3,seq]\n  input %w : f32[3]\n" +
		"  %0 = broadcast_in_dim(%w) {dims=[0], shape=[3,13]} : f32[3,seq]\n  %1 = mul(%x, %0) : f32[3,seq]\n" +
		"  %2 = reduce_sum(%1) {axes=[1]} : f32[3]\n  output y = %2\n"},
	{"a loop dividing static rows by their static sums", "  dims { seq in [0,19] }\n  input %e : f32[3,seq]\n  input %s : f32[3,1]\n" +
		"  %0 = broadcast_in_dim(%s) {dims=[0,1], shape=[3,19]} : f32[3,seq]\n  %1 = div(%e, %0) : f32[3,seq]\n  output y = %1\n"},
	{"a sum over seq alone", "  dims { seq in [1,19] }\n  input %x : f32[seq]\n" +
		"  %0 = reduce_max(%x) {axes=[0]} : f32[]\n  output y = %0\n"},
	{"the softmax's gradient y·(dy − Σ dy·y)", "  dims { b in [1,3], seq in [1,31] }\n  input %y : f32[b,seq,seq]\n  input %dy : f32[b,seq,seq]\n" +
		"  %0 = mul(%dy, %y) : f32[b,seq,seq]\n  %1 = reduce_sum(%0) {axes=[2]} : f32[b,seq]\n  %2 = broadcast_in_dim(%1) {dims=[0,1], shape=[3,31,31]} : f32[b,seq,seq]\n" +
		"  %3 = sub(%dy, %2) : f32[b,seq,seq]\n  %4 = mul(%y, %3) : f32[b,seq,seq]\n  output dx = %4\n  output s = %1\n"},
	{"a row tensor read beside the row sums (the division's gradient)", "  dims { b in [1,3], seq in [1,23] }\n  input %e : f32[b,seq,seq]\n  input %g : f32[b,seq,seq]\n  input %s : f32[b,seq,1]\n" +
		"  %0 = broadcast_in_dim(%s) {dims=[0,1,2], shape=[3,23,23]} : f32[b,seq,seq]\n  %1 = div(%g, %0) : f32[b,seq,seq]\n  %2 = mul(%1, %e) : f32[b,seq,seq]\n" +
		"  %3 = reduce_sum(%2) {axes=[2], keepdims=true} : f32[b,seq,1]\n  %4 = div(%3, %s) : f32[b,seq,1]\n  %5 = neg(%4) : f32[b,seq,1]\n" +
		"  %6 = broadcast_in_dim(%5) {dims=[0,1,2], shape=[3,23,23]} : f32[b,seq,seq]\n  %7 = add(%1, %6) : f32[b,seq,seq]\n  output de = %7\n"},
}

// One build of each runs on the memchecked simulator at 1, primes and the bound (smaller first),
// within tolerance of the reference interpreter and bit for bit the static build's at those
// sizes (the bounds keep the rows within one block of 32 threads, the static kernels' block at
// every run).
func TestSymbolicRowLength(t *testing.T) { checkBuiltOnce(t, rowLengthGraphs) }

// A reduction of a symbolic last dim beside a static tensor of other sizes than its rows is
// refused naming it.
func TestSymbolicRowLengthRefused(t *testing.T) {
	checkRefused(t, "graph s {\n  dims { seq in [1,13] }\n  input %x : f32[3,seq]\n  input %w : f32[1,3]\n"+
		"  %0 = reshape(%w) {shape=[3]} : f32[3]\n  %1 = broadcast_in_dim(%0) {dims=[0], shape=[3,13]} : f32[3,seq]\n  %2 = mul(%x, %1) : f32[3,seq]\n"+
		"  %3 = reduce_sum(%2) {axes=[1]} : f32[3]\n  output y = %3\n}\n",
		"input %w : f32[1,3] is read beside a reduction of the symbolic seq")
}

// The NVVM producer builds them itself (codegen/nvvm's symrowlen.go; a borrowed entry fails):
// codegen/ptx's launches, and at the same sizes bit for bit codegen/ptx's build where no op is
// approximate.
func TestSymbolicRowLengthNVVM(t *testing.T) { checkOwnNVVM(t, rowLengthGraphs) }

// checkOwnNVVM builds each graph with the NVVM producer (checkNVVM), failing on a borrowed entry.
func checkOwnNVVM(t *testing.T, graphs []struct{ name, body string }) {
	lib := libnvvm.Require(t)
	for _, tc := range graphs {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("s.gir", []byte("graph s {\n"+tc.body+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range checkNVVM(t, g, lib.Path) {
				if k.Producer == "ptx" {
					t.Errorf("kernel %s: codegen/ptx's entry (%v)", k.Name, k.Notes)
				}
			}
		})
	}
}

// rowBroadcastViewGraphs divide the exponentials of scores read through a transpose that moves
// the keys last by their row sums broadcast back along them: the loop after the row-length
// reduction (compiler/symrowlen.go's rowBroadcast) reads the transpose's top at the run's
// sizes, the row sums at the row (symfold_reduce_view.go).
var rowBroadcastViewGraphs = []struct{ name, body string }{
	{"exp of transposed scores divided by static rows' sums (f32)", "  dims { seq in [1,13] }\n  input %x : f32[2,seq,4]\n  input %s : f32[2,4,1]\n" +
		"  %0 = transpose(%x) {perm=[0,2,1]} : f32[2,4,seq]\n  %1 = exp(%0) : f32[2,4,seq]\n" +
		"  %2 = broadcast_in_dim(%s) {dims=[0,1,2], shape=[2,4,13]} : f32[2,4,seq]\n  %3 = div(%1, %2) : f32[2,4,seq]\n  output y = %3\n"},
	{"exp of scores [b, seq, t] transposed, batch and seq symbolic, the sums a view's top too (f16)", "  dims { b in [1,3], seq in [1,11] }\n  input %x : f16[b,seq,5]\n  input %s : f16[b,5,1]\n" +
		"  %0 = transpose(%x) {perm=[0,2,1]} : f16[b,5,seq]\n  %1 = exp(%0) : f16[b,5,seq]\n" +
		"  %2 = broadcast_in_dim(%s) {dims=[0,1,2], shape=[3,5,11]} : f16[b,5,seq]\n  %3 = div(%1, %2) : f16[b,5,seq]\n  output y = %3\n"},
	{"over heads, seq from 0, the sums without their last dim (f32)", "  dims { seq in [0,17] }\n  input %x : f32[2,2,seq,3]\n  input %s : f32[2,2,3]\n" +
		"  %0 = transpose(%x) {perm=[0,1,3,2]} : f32[2,2,3,seq]\n  %1 = exp(%0) : f32[2,2,3,seq]\n" +
		"  %2 = broadcast_in_dim(%s) {dims=[0,1,2], shape=[2,2,3,17]} : f32[2,2,3,seq]\n  %3 = div(%1, %2) : f32[2,2,3,seq]\n  output y = %3\n  output e = %1\n"},
}

// One build of each runs on the memchecked simulator at 1, primes and the bound (smaller first),
// within tolerance of the reference interpreter and bit for bit the static build's at those sizes.
func TestSymbolicRowBroadcastViews(t *testing.T) { checkBuiltOnce(t, rowBroadcastViewGraphs) }

// The NVVM producer builds them itself (codegen/nvvm's symrowlen.go reads the views' tops as its
// row-length template does): codegen/ptx's launches, and bit for bit codegen/ptx's build.
func TestSymbolicRowBroadcastViewsNVVM(t *testing.T) { checkOwnNVVM(t, rowBroadcastViewGraphs) }

// Row sums read through a view of their own before the broadcast stay refused: the loop reads
// buffers of the kept sizes at the row, not views of them.
func TestSymbolicRowBroadcastViewsRefused(t *testing.T) {
	checkRefused(t, "graph s {\n  dims { seq in [1,13] }\n  input %x : f32[2,seq,4]\n  input %s : f32[2,1,4]\n"+
		"  %0 = transpose(%x) {perm=[0,2,1]} : f32[2,4,seq]\n  %1 = exp(%0) : f32[2,4,seq]\n  %t = transpose(%s) {perm=[0,2,1]} : f32[2,4,1]\n"+
		"  %2 = broadcast_in_dim(%t) {dims=[0,1,2], shape=[2,4,13]} : f32[2,4,seq]\n  %3 = div(%1, %2) : f32[2,4,seq]\n  output y = %3\n}\n",
		"%0 = transpose(%x) {perm=[0,2,1]} : f32[2,4,seq] has 8*seq; a kernel runs at symbolic sizes when its rows")
}
