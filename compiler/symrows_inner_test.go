package compiler_test

// innerReductions keep their symbolic rows and reduce static axes that are not trailing: nearest
// upsampling's backward (each input pixel's 2×2 window of the gradient, axes [3, 5] of [N, C, H,
// 2, W, 2], or [3] once the trailing window is summed, also at unet's sizes), a middle axis in f16
// with keepdims spread back, one in bf16 over two column tiles, a softmax over a middle axis, a
// static dim before the symbolic one, and two symbolic dims leading. codegen/ptx takes them with
// the static build's template: the column one with its tiles the size (symcolumn.go) for a
// contiguous reduced block, the row one over the kept elements for scattered axes; so static
// marks every one (bit for bit the static build). They are not folds (the rows stay kept), but
// TestSymbolicFolds runs them the same way: memchecked at the bounds, 1 and primes against the
// reference, and against the static build where static.
var innerReductions = []struct {
	name, body string
	static     bool
}{
	{"upsampling backward, 2×2 windows", "  dims { batch in [1,7] }\n  input %dy : f32[batch,3,2,2,3,2]\n" +
		"  %0 = reduce_sum(%dy) {axes=[3,5]} : f32[batch,3,2,3]\n  output dx = %0\n", true},
	{"upsampling backward, the rows' windows summed", "  dims { batch in [1,7] }\n  input %dy : f32[batch,16,4,2,4]\n" +
		"  %0 = reduce_sum(%dy) {axes=[3]} : f32[batch,16,4,4]\n  output dx = %0\n", true},
	{"a middle axis, f16, keepdims, spread back", "  dims { batch in [0,6] }\n  input %x : f16[batch,5,3]\n" +
		"  %0 = reduce_sum(%x) {axes=[1], keepdims=true} : f16[batch,1,3]\n  %1 = broadcast_in_dim(%0) {shape=[6,5,3], dims=[0,1,2]} : f16[batch,5,3]\n" +
		"  %2 = sub(%x, %1) : f16[batch,5,3]\n  output y = %2\n  output s = %0\n", true},
	{"softmax over a middle axis", "  dims { batch in [1,5] }\n  input %x : f32[batch,6,4]\n" +
		"  %0 = reduce_max(%x) {axes=[1]} : f32[batch,4]\n  %1 = broadcast_in_dim(%0) {shape=[5,6,4], dims=[0,2]} : f32[batch,6,4]\n" +
		"  %2 = sub(%x, %1) : f32[batch,6,4]\n  %3 = exp(%2) : f32[batch,6,4]\n  %4 = reduce_sum(%3) {axes=[1]} : f32[batch,4]\n" +
		"  %5 = broadcast_in_dim(%4) {shape=[5,6,4], dims=[0,2]} : f32[batch,6,4]\n  %6 = div(%3, %5) : f32[batch,6,4]\n  output y = %6\n", true},
	{"unet's upsampling backward, the rows' windows summed", "  dims { batch in [1,5] }\n  input %dy : f32[batch,16,8,2,8]\n" +
		"  %0 = reduce_sum(%dy) {axes=[3]} : f32[batch,16,8,8]\n  output dx = %0\n", true},
	{"a middle axis, bf16, two column tiles", "  dims { batch in [1,6] }\n  input %x : bf16[batch,7,40]\n" +
		"  %0 = reduce_sum(%x) {axes=[1]} : bf16[batch,40]\n  output s = %0\n", true},
	{"a static dim before the symbolic one", "  dims { seq in [1,6] }\n  input %x : f32[2,seq,4,3]\n" +
		"  %0 = reduce_sum(%x) {axes=[2]} : f32[2,seq,3]\n  output s = %0\n", true},
	{"two symbolic dims leading", "  dims { b in [1,3], t in [1,5] }\n  input %x : f32[b,t,4,3]\n" +
		"  %0 = reduce_max(%x) {axes=[2]} : f32[b,t,3]\n  output m = %0\n", true},
}
