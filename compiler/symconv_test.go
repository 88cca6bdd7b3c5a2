package compiler_test

import (
	"testing"
)

// convFolds are convolutions' weight gradients over a symbolic batch, written as autodiff
// writes them (passes/autodiff's gradConv): x [batch, C, H, W] viewed as [C/G, G·batch, H, W]
// convolved by dy [batch, O, OH, OW] viewed as [O, batch, OH, OW], the forward's stride as the
// dilation; the batch is the input channels, the result static. TestSymbolicFolds runs them:
// the direct template takes the run's taps in the static kernel's order (codegen/ptx's
// symconv.go), bit for bit.
var convFolds = []struct {
	name, body string
	static     bool
}{
	{"f32, padding 1, an epilogue", "  dims { batch in [1,13] }\n  input %x : f32[batch,2,5,5]\n  input %dy : f32[batch,4,5,5]\n" +
		"  %0 = reshape(%x) {shape=[13,1,2,5,5]} : f32[batch,1,2,5,5]\n  %1 = transpose(%0) {perm=[2,1,0,3,4]} : f32[2,1,batch,5,5]\n" +
		"  %2 = reshape(%1) {shape=[2,13,5,5]} : f32[2,batch,5,5]\n" +
		"  %3 = reshape(%dy) {shape=[13,1,4,5,5]} : f32[batch,1,4,5,5]\n  %4 = transpose(%3) {perm=[1,2,0,3,4]} : f32[1,4,batch,5,5]\n" +
		"  %5 = reshape(%4) {shape=[4,13,5,5]} : f32[4,batch,5,5]\n" +
		"  %6 = conv2d(%2, %5) {padding=[1,1]} : f32[2,4,3,3]\n" +
		"  %c = constant() {dtype=f32, shape=[], value=[0.5]} : f32[]\n  %7 = broadcast_in_dim(%c) {shape=[2,4,3,3], dims=[]} : f32[2,4,3,3]\n" +
		"  %8 = mul(%6, %7) : f32[2,4,3,3]\n  output dw = %8\n", true},
	{"bf16, stride 2, 2 groups", "  dims { batch in [1,7] }\n  input %x : bf16[batch,4,9,9]\n  input %dy : bf16[batch,6,4,4]\n" +
		"  %0 = reshape(%x) {shape=[7,2,2,9,9]} : bf16[batch,2,2,9,9]\n  %1 = transpose(%0) {perm=[2,1,0,3,4]} : bf16[2,2,batch,9,9]\n" +
		"  %2 = reshape(%1) {shape=[2,14,9,9]} : bf16[2,2*batch,9,9]\n" +
		"  %3 = reshape(%dy) {shape=[7,2,3,4,4]} : bf16[batch,2,3,4,4]\n  %4 = transpose(%3) {perm=[1,2,0,3,4]} : bf16[2,3,batch,4,4]\n" +
		"  %5 = reshape(%4) {shape=[6,7,4,4]} : bf16[6,batch,4,4]\n" +
		"  %6 = conv2d(%2, %5) {dilation=[2,2], groups=2} : bf16[2,6,3,3]\n  output dw = %6\n", true},
	{"f16, 3 input channels", "  dims { batch in [1,8] }\n  input %x : f16[batch,3,6,6]\n  input %dy : f16[batch,2,6,6]\n" +
		"  %0 = reshape(%x) {shape=[8,1,3,6,6]} : f16[batch,1,3,6,6]\n  %1 = transpose(%0) {perm=[2,1,0,3,4]} : f16[3,1,batch,6,6]\n" +
		"  %2 = reshape(%1) {shape=[3,8,6,6]} : f16[3,batch,6,6]\n" +
		"  %3 = reshape(%dy) {shape=[8,1,2,6,6]} : f16[batch,1,2,6,6]\n  %4 = transpose(%3) {perm=[1,2,0,3,4]} : f16[1,2,batch,6,6]\n" +
		"  %5 = reshape(%4) {shape=[2,8,6,6]} : f16[2,batch,6,6]\n" +
		"  %6 = conv2d(%2, %5) {padding=[1,1]} : f16[3,2,3,3]\n  output dw = %6\n", true},
}

// A convolution contracting the batch is refused where its operands are not rows of the batch
// over static sizes: an image whose height is symbolic too, and an operand the passes
// materialize transposed (a buffer [4, batch, 5, 5], laid out at the run's sizes), which the
// bound's index arithmetic would misread.
func TestSymbolicConvWeightGradRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"a symbolic height", "  dims { batch in [1,4], h in [3,6] }\n  input %x : f32[batch,2,h,5]\n  input %dy : f32[batch,4,3,3]\n" +
			"  %0 = transpose(%x) {perm=[1,0,2,3]} : f32[2,batch,h,5]\n  %1 = transpose(%dy) {perm=[1,0,2,3]} : f32[4,batch,3,3]\n" +
			"  %2 = conv2d(%0, %1) : f32[2,4,h-2,3]\n  output dw = %2\n",
			"moves a dim of its rows (a static dim before a symbolic one)"},
		{"a transposed buffer", "  dims { batch in [1,13] }\n  input %x : f32[batch,2,5,5]\n  input %dy : f32[batch,4,5,5]\n" +
			"  %0 = transpose(%x) {perm=[1,0,2,3]} : f32[2,batch,5,5]\n  %1 = transpose(%dy) {perm=[1,0,2,3]} : f32[4,batch,5,5]\n" +
			"  %2 = conv2d(%0, %1) {padding=[1,1]} : f32[2,4,3,3]\n  output dw = %2\n",
			"contraction kernel k1_conv (conv2d), over symbolic buffer t3: input %x : f32[batch,2,5,5] has batch rows"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkRefused(t, "graph s {\n"+tc.body+"}\n", tc.want) })
	}
}
