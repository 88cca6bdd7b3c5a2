package compiler_test

// scatterFolds fold their symbolic rows with static axes around kept static ones: BatchNorm's
// training statistics over [N, C, H, W]'s axes 0, 2 and 3 (the sums of x and of its squares, the
// run's count), its backward's sums of dy and dy·x̂, over several dtypes, with and without
// keepdims, spread back along the run's rows, and over two symbolic dims. static marks those
// whose static build agrees bit for bit (codegen/ptx's symfold_scatter.go: the same block, or
// sums exact in the f64 accumulator). TestSymbolicFolds runs them.
var scatterFolds = []struct {
	name, body string
	static     bool
}{
	{"statistics, f32, keepdims", "  dims { batch in [1,31] }\n  input %x : f32[batch,3,4,5]\n" +
		"  %c = constant() {dtype=f32, shape=[], value=[1]} : f32[]\n  %1 = broadcast_in_dim(%c) {shape=[31,3,4,5], dims=[]} : f32[batch,3,4,5]\n" +
		"  %n = reduce_sum(%1) {axes=[0,2,3], keepdims=true} : f32[1,3,1,1]\n  %s = reduce_sum(%x) {axes=[0,2,3], keepdims=true} : f32[1,3,1,1]\n" +
		"  %m = div(%s, %n) : f32[1,3,1,1]\n  %mb = broadcast_in_dim(%m) {shape=[31,3,4,5], dims=[0,1,2,3]} : f32[batch,3,4,5]\n" +
		"  %xc = sub(%x, %mb) : f32[batch,3,4,5]\n  %sq = mul(%xc, %xc) : f32[batch,3,4,5]\n  %v = reduce_sum(%sq) {axes=[0,2,3], keepdims=true} : f32[1,3,1,1]\n" +
		"  output mean = %m\n  output var = %v\n  output count = %n\n", true},
	{"sum and max, f16", "  dims { batch in [1,31] }\n  input %x : f16[batch,5,7]\n" +
		"  %0 = reduce_sum(%x) {axes=[0,2]} : f16[5]\n  %1 = reduce_max(%x) {axes=[0,2]} : f16[5]\n  output s = %0\n  output m = %1\n", true},
	{"backward's sums of dy and dy·x̂, bf16, spread back", "  dims { batch in [1,31] }\n  input %dy : bf16[batch,4,3,3]\n  input %xh : bf16[batch,4,3,3]\n" +
		"  %0 = reduce_sum(%dy) {axes=[0,2,3]} : bf16[4]\n  %1 = mul(%dy, %xh) : bf16[batch,4,3,3]\n  %2 = reduce_sum(%1) {axes=[0,2,3]} : bf16[4]\n" +
		"  %3 = broadcast_in_dim(%2) {shape=[31,4,3,3], dims=[1]} : bf16[batch,4,3,3]\n  %4 = mul(%xh, %3) : bf16[batch,4,3,3]\n  %5 = sub(%dy, %4) : bf16[batch,4,3,3]\n" +
		"  output db = %0\n  output dw = %2\n  output dx = %5\n", true},
	{"a wide channel block (256 threads at the bound)", "  dims { batch in [0,40] }\n  input %x : f32[batch,2,9]\n" +
		"  %0 = reduce_sum(%x) {axes=[0,2], keepdims=true} : f32[1,2,1]\n  output s = %0\n", true},
	{"two symbolic dims", "  dims { b in [1,4], t in [1,9] }\n  input %x : f32[b,t,3,2]\n" +
		"  %0 = reduce_sum(%x) {axes=[0,1,3]} : f32[3]\n  output s = %0\n", true},
}
