package compiler_test

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// foldReduceViewGraphs are bias gradients summing, over the rows, operands that merge
// attention's heads back through a transpose and a reshape ([batch, h, seq, d] read as
// [batch, seq, h·d]): the buffers' rows are not the kernel's, so the column template reads each
// merged value at the run's sizes through its views. The packed case is nn.MultiheadAttention's
// in-projection: dq, dk and dv padded into their thirds of [batch, seq, 3·h·d], summed, and that
// sum written too (the packed weight's gradient reads it).
var foldReduceViewGraphs = []struct{ name, body string }{
	{"heads merged, batch and seq symbolic (f32)", "  dims { batch in [1,4], seq in [1,7] }\n  input %dq : f32[batch,2,seq,4]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[batch,seq,2,4]\n  %1 = reshape(%0) {shape=[4,7,8]} : f32[batch,seq,8]\n" +
		"  %2 = reduce_sum(%1) {axes=[0,1]} : f32[8]\n  output db = %2\n"},
	{"packed q, k and v, the sum written too (f16)", "  dims { batch in [1,4], seq in [1,7] }\n" +
		"  input %dq : f16[batch,2,seq,4]\n  input %dk : f16[batch,2,seq,4]\n  input %dv : f16[batch,2,seq,4]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f16[batch,seq,2,4]\n  %1 = reshape(%0) {shape=[4,7,8]} : f16[batch,seq,8]\n" +
		"  %2 = transpose(%dk) {perm=[0,2,1,3]} : f16[batch,seq,2,4]\n  %3 = reshape(%2) {shape=[4,7,8]} : f16[batch,seq,8]\n" +
		"  %4 = transpose(%dv) {perm=[0,2,1,3]} : f16[batch,seq,2,4]\n  %5 = reshape(%4) {shape=[4,7,8]} : f16[batch,seq,8]\n" +
		"  %6 = pad(%1) {low=[0,0,0], high=[0,0,16]} : f16[batch,seq,24]\n  %7 = pad(%3) {low=[0,0,8], high=[0,0,8]} : f16[batch,seq,24]\n" +
		"  %8 = pad(%5) {low=[0,0,16], high=[0,0,0]} : f16[batch,seq,24]\n  %9 = add(%6, %7) : f16[batch,seq,24]\n" +
		"  %10 = add(%9, %8) : f16[batch,seq,24]\n  %11 = reduce_sum(%10) {axes=[0,1]} : f16[24]\n  output dw = %10\n  output db = %11\n"},
	{"heads merged times a buffer of the rows (f32)", "  dims { batch in [1,4], seq in [1,7] }\n  input %dq : f32[batch,2,seq,4]\n  input %x : f32[batch,seq,8]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[batch,seq,2,4]\n  %1 = reshape(%0) {shape=[4,7,8]} : f32[batch,seq,8]\n" +
		"  %2 = mul(%1, %x) : f32[batch,seq,8]\n  %3 = reduce_sum(%2) {axes=[0,1]} : f32[8]\n  output dg = %3\n"},
	// seq is not the buffer's leading dim: a head's rows start seq·8 apart at the run's sizes.
	{"heads merged, the sequence not leading, rows flattened (bf16)", "  dims { seq in [1,13] }\n  input %dv : bf16[2,3,seq,8]\n" +
		"  %0 = transpose(%dv) {perm=[0,2,1,3]} : bf16[2,seq,3,8]\n  %1 = reshape(%0) {shape=[26,24]} : bf16[2*seq,24]\n" +
		"  %2 = reduce_sum(%1) {axes=[0]} : bf16[24]\n  output db = %2\n"},
	{"a max and an SGD update over the merged heads, the sequence not leading (f32)", "  dims { seq in [1,11] }\n  input %dk : f32[3,2,seq,4]\n  input %b : f32[8]\n" +
		"  %0 = transpose(%dk) {perm=[0,2,1,3]} : f32[3,seq,2,4]\n  %1 = reshape(%0) {shape=[3,11,8]} : f32[3,seq,8]\n" +
		"  %2 = reduce_max(%1) {axes=[0,1]} : f32[8]\n  %3 = constant() {dtype=f32, shape=[8], value=[-0.1]} : f32[8]\n" +
		"  %4 = mul(%2, %3) : f32[8]\n  %5 = add(%b, %4) : f32[8]\n  output nb = %5\n"},
	// One head: k's bias gradient sums kᵀ's gradient read back through the transpose that made
	// kᵀ, which moves seq: the top's own rows lead, the buffer's do not.
	{"kᵀ's gradient through the transpose moving seq, batch and seq symbolic (f32)", "  dims { batch in [1,4], seq in [1,7] }\n  input %dkt : f32[batch,1,8,seq]\n" +
		"  %0 = transpose(%dkt) {perm=[0,1,3,2]} : f32[batch,1,seq,8]\n  %1 = reduce_sum(%0) {axes=[0,1,2]} : f32[8]\n  output db = %1\n"},
	{"kᵀ's gradient through the transpose moving seq, an SGD update (f16)", "  dims { seq in [0,13] }\n  input %dkt : f16[3,8,seq]\n  input %b : f16[8]\n" +
		"  %0 = transpose(%dkt) {perm=[0,2,1]} : f16[3,seq,8]\n  %1 = reduce_sum(%0) {axes=[0,1]} : f16[8]\n" +
		"  %2 = constant() {dtype=f16, shape=[8], value=[-0.1]} : f16[8]\n  %3 = mul(%1, %2) : f16[8]\n  %4 = add(%b, %3) : f16[8]\n  output nb = %4\n"},
	{"kᵀ's gradient through the transpose moving seq, times a buffer of the rows (bf16)", "  dims { seq in [1,13] }\n  input %dkt : bf16[2,1,8,seq]\n  input %x : bf16[2,1,seq,8]\n" +
		"  %0 = transpose(%dkt) {perm=[0,1,3,2]} : bf16[2,1,seq,8]\n  %1 = mul(%0, %x) : bf16[2,1,seq,8]\n  %2 = reduce_sum(%1) {axes=[0,1,2]} : bf16[8]\n  output dg = %2\n"},
}

// One build of each runs on the memchecked simulator at the bound, 1 and primes (smaller first),
// within tolerance of the reference interpreter and bit for bit the static build's at those
// sizes: the column template folds the run's rows through the views in the static kernel's order.
func TestSymbolicFoldReduceViews(t *testing.T) { checkBuiltOnce(t, foldReduceViewGraphs) }

// rowReduceViewGraphs reduce the rows of attention's heads merged back through a transpose and a
// reshape ([batch, h, seq, d] read as [batch, seq, h·d]) over their trailing axis, when not fused
// into the product that made them: a sum, a layer norm (affine), a softmax (its max and sum
// online); a sum per head folds the transposed heads over the rows and their features
// (scattered axes), over the heads keeping the rows (the column template); a softmax over the
// keys and a sum over the sequence read through a transpose moving them last (the row-length
// template, symrowlen.go); a loss-like sum of every element is long enough at the bound for the split
// reduction. Each template reads the tops of the views at the run's sizes.
var rowReduceViewGraphs = []struct{ name, body string }{
	{"row sums of the merged heads, batch and seq symbolic (f32)", "  dims { batch in [1,4], seq in [1,7] }\n  input %dq : f32[batch,2,seq,4]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[batch,seq,2,4]\n  %1 = reshape(%0) {shape=[4,7,8]} : f32[batch,seq,8]\n" +
		"  %2 = reduce_sum(%1) {axes=[2]} : f32[batch,seq]\n  output s = %2\n"},
	{"a layer norm after merging the heads (f16)", "  dims { seq in [1,11] }\n  input %v : f16[2,2,seq,4]\n  input %g : f16[8]\n  input %b : f16[8]\n" +
		"  %0 = transpose(%v) {perm=[0,2,1,3]} : f16[2,seq,2,4]\n  %1 = reshape(%0) {shape=[2,11,8]} : f16[2,seq,8]\n" +
		"  %n0 = constant() {dtype=f16, shape=[], value=[8.0]} : f16[]\n  %n = broadcast_in_dim(%n0) {dims=[], shape=[2,11,1]} : f16[2,seq,1]\n" +
		"  %e0 = constant() {dtype=f16, shape=[], value=[1e-05]} : f16[]\n  %eps = broadcast_in_dim(%e0) {dims=[], shape=[2,11,1]} : f16[2,seq,1]\n" +
		"  %s = reduce_sum(%1) {axes=[2], keepdims=true} : f16[2,seq,1]\n  %mean = div(%s, %n) : f16[2,seq,1]\n" +
		"  %mb = broadcast_in_dim(%mean) {dims=[0,1,2], shape=[2,11,8]} : f16[2,seq,8]\n  %c = sub(%1, %mb) : f16[2,seq,8]\n" +
		"  %sq = mul(%c, %c) : f16[2,seq,8]\n  %ss = reduce_sum(%sq) {axes=[2], keepdims=true} : f16[2,seq,1]\n" +
		"  %var = div(%ss, %n) : f16[2,seq,1]\n  %ve = add(%var, %eps) : f16[2,seq,1]\n  %r = rsqrt(%ve) : f16[2,seq,1]\n" +
		"  %rb = broadcast_in_dim(%r) {dims=[0,1,2], shape=[2,11,8]} : f16[2,seq,8]\n  %xn = mul(%c, %rb) : f16[2,seq,8]\n" +
		"  %gb = broadcast_in_dim(%g) {dims=[2], shape=[2,11,8]} : f16[2,seq,8]\n  %h = mul(%xn, %gb) : f16[2,seq,8]\n" +
		"  %bb = broadcast_in_dim(%b) {dims=[2], shape=[2,11,8]} : f16[2,seq,8]\n  %y = add(%h, %bb) : f16[2,seq,8]\n  output y = %y\n"},
	{"a softmax over the merged heads' rows, the rows flattened (bf16)", "  dims { seq in [1,13] }\n  input %v : bf16[2,3,seq,8]\n" +
		"  %0 = transpose(%v) {perm=[0,2,1,3]} : bf16[2,seq,3,8]\n  %1 = reshape(%0) {shape=[26,24]} : bf16[2*seq,24]\n" +
		"  %m = reduce_max(%1) {axes=[1], keepdims=true} : bf16[2*seq,1]\n  %mb = broadcast_in_dim(%m) {dims=[0,1], shape=[26,24]} : bf16[2*seq,24]\n" +
		"  %z = sub(%1, %mb) : bf16[2*seq,24]\n  %e = exp(%z) : bf16[2*seq,24]\n  %s = reduce_sum(%e) {axes=[1], keepdims=true} : bf16[2*seq,1]\n" +
		"  %sb = broadcast_in_dim(%s) {dims=[0,1], shape=[26,24]} : bf16[2*seq,24]\n  %y = div(%e, %sb) : bf16[2*seq,24]\n  output y = %y\n"},
	{"sums per head over the rows and features, scattered axes (f32)", "  dims { batch in [1,4], seq in [1,7] }\n  input %dq : f32[batch,2,seq,4]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[batch,seq,2,4]\n  %1 = reduce_sum(%0) {axes=[0,1,3]} : f32[2]\n  output s = %1\n"},
	{"sums per head, kᵀ's gradient through the transpose moving seq, scattered axes (f16)", "  dims { seq in [0,13] }\n  input %dkt : f16[3,2,4,seq]\n" +
		"  %0 = transpose(%dkt) {perm=[0,3,1,2]} : f16[3,seq,2,4]\n  %1 = reduce_sum(%0) {axes=[0,1,3]} : f16[2]\n  output s = %1\n"},
	{"sums over the heads, the column template keeping the rows (f32)", "  dims { batch in [1,4], seq in [1,7] }\n  input %dq : f32[batch,2,seq,4]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[batch,seq,2,4]\n  %1 = reduce_sum(%0) {axes=[2]} : f32[batch,seq,4]\n  output s = %1\n"},
	// The row-length template: a softmax over the keys, read through a transpose that moves them last.
	{"a softmax over the keys read through a transpose (f32)", "  dims { seq in [1,13] }\n  input %x : f32[2,seq,4]\n" +
		"  %0 = transpose(%x) {perm=[0,2,1]} : f32[2,4,seq]\n  %1 = reduce_max(%0) {axes=[2], keepdims=true} : f32[2,4,1]\n" +
		"  %2 = broadcast_in_dim(%1) {dims=[0,1,2], shape=[2,4,13]} : f32[2,4,seq]\n  %3 = sub(%0, %2) : f32[2,4,seq]\n  %4 = exp(%3) : f32[2,4,seq]\n" +
		"  %5 = reduce_sum(%4) {axes=[2], keepdims=true} : f32[2,4,1]\n  %6 = broadcast_in_dim(%5) {dims=[0,1,2], shape=[2,4,13]} : f32[2,4,seq]\n" +
		"  %7 = div(%4, %6) : f32[2,4,seq]\n  output y = %7\n"},
	{"a softmax over the keys of scores [batch, h, seq, t] read through a transpose, batch and seq symbolic (bf16)", "  dims { batch in [1,3], seq in [1,11] }\n  input %x : bf16[batch,2,seq,5]\n" +
		"  %0 = transpose(%x) {perm=[0,1,3,2]} : bf16[batch,2,5,seq]\n  %1 = reduce_max(%0) {axes=[3], keepdims=true} : bf16[batch,2,5,1]\n" +
		"  %2 = broadcast_in_dim(%1) {dims=[0,1,2,3], shape=[3,2,5,11]} : bf16[batch,2,5,seq]\n  %3 = sub(%0, %2) : bf16[batch,2,5,seq]\n  %4 = exp(%3) : bf16[batch,2,5,seq]\n" +
		"  %5 = reduce_sum(%4) {axes=[3], keepdims=true} : bf16[batch,2,5,1]\n  %6 = broadcast_in_dim(%5) {dims=[0,1,2,3], shape=[3,2,5,11]} : bf16[batch,2,5,seq]\n" +
		"  %7 = div(%4, %6) : bf16[batch,2,5,seq]\n  output y = %7\n"},
	{"a sum over the sequence of the merged heads, moved last by a second transpose (f16)", "  dims { seq in [1,13] }\n  input %dq : f16[2,2,seq,4]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f16[2,seq,2,4]\n  %1 = reshape(%0) {shape=[2,13,8]} : f16[2,seq,8]\n" +
		"  %2 = transpose(%1) {perm=[0,2,1]} : f16[2,8,seq]\n  %3 = reduce_sum(%2) {axes=[2]} : f16[2,8]\n  output s = %3\n"},
	// 2·seq·8 = 32768 elements at the bound: the split reduction, over the run's count.
	{"a sum of every merged element, split over blocks (f32)", "  dims { seq in [1,2048] }\n  input %dq : f32[2,2,seq,4]\n" +
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[2,seq,2,4]\n  %1 = reshape(%0) {shape=[2,2048,8]} : f32[2,seq,8]\n" +
		"  %2 = reduce_sum(%1) {axes=[0,1,2]} : f32[]\n  output s = %2\n"},
}

// One build of each runs on the memchecked simulator at the bound, 1 and primes (smaller first),
// within tolerance of the reference interpreter and bit for bit the static build's at those
// sizes: the row template reduces each of the run's rows (the scattered fold each kept element
// over the run's count) through the views in the static kernel's order.
func TestSymbolicRowReduceViews(t *testing.T) { checkBuiltOnce(t, rowReduceViewGraphs) }

// A fold around a kept symbolic dim through views (the merged heads summed over the batch and
// their features, seq kept) stays refused, as without views (TestSymbolicFoldsRefused): no
// template folds around a kept symbolic dim.
func TestSymbolicFoldReduceViewsRefused(t *testing.T) {
	checkRefused(t, "graph s {\n  dims { seq in [1,7] }\n  input %dq : f32[2,2,seq,4]\n"+
		"  %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[2,seq,2,4]\n  %1 = reduce_sum(%0) {axes=[0,3]} : f32[seq,2]\n  output s = %1\n}\n",
		"input %dq : f32[2,2,seq,4] has 4*seq rows, %0 = transpose(%dq) {perm=[0,2,1,3]} : f32[2,seq,2,4] has 2*seq")
}

// A layer norm after merging attention's heads back, written with the DSL as PyTorch code writes
// it (out.transpose(1, 2).reshape(b, seq, h·d), then F.layer_norm), batch and seq symbolic: the
// norm's row kernel reads the heads through the transpose and the reshape at the run's sizes,
// within tolerance of the reference and bit for bit the static build at 1, primes and the bounds.
func TestSymbolicLayerNormMergedHeads(t *testing.T) {
	for _, dt := range []ir.DType{ir.F32, ir.BF16} {
		t.Run(dt.String(), func(t *testing.T) {
			g, err := frontend.Build("s", func(b *frontend.Builder) {
				batch, seq := b.Dim("batch", 1, 3), b.Dim("seq", 1, 11)
				heads := b.Input("heads", dt, batch, 2, seq, 4)
				w, bias := b.Input("w", dt, 8), b.Input("b", dt, 8)
				b.Output("y", frontend.LayerNorm(heads.Transpose(1, 2).Reshape(batch, seq, 8), []int{8}, w, bias, 1e-5))
			})
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, g)
			checkStaticBits(t, g)
		})
	}
}
