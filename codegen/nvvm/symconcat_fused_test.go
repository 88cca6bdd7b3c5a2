package nvvm

import "testing"

// TestSymbolicConcatFused: concats along a symbolic dim fused with computation
// (symconcat_fused.go) are the NVVM producer's own (Lacks names nothing), checkConcatKernel's
// way (codegen/ptx's launch, at past 0, 1, a prime and the bound bit for bit codegen/ptx's but
// for libdevice's tanh and exp, the reference within tolerance): a cast before (a decoder's f16 cache grown by its f32 step), tanh after over
// three operands, a scale by a broadcast per-column tensor with the concat an output too, a
// bf16 concat whose operands compute (exp, neg) and an output of other sizes beside (a second
// loop), an iota selecting between two concats along a middle axis, and literal tensors (a
// concat's operand, one broadcast beside it).
func TestSymbolicConcatFused(t *testing.T) {
	p := requireProducer(t)
	const bound = 23
	for _, tc := range []struct {
		name, src string
	}{
		{"f16 cache grown by a cast step", "graph k {\n  input %a : f16[2,4,{{past}},8]\n  input %b : f32[2,4,1,8]\n  %0 = cast(%b) {to=f16} : f16[2,4,1,8]\n" +
			"  %1 = concat(%a, %0) {axis=2} : f16[2,4,{{past+1}},8]\n  output y = %1\n}\n"},
		{"f32 tanh after three operands", "graph k {\n  input %a : f32[{{past}},32]\n  input %b : f32[1,32]\n  input %c : f32[{{past}},32]\n" +
			"  %0 = concat(%a, %b, %c) {axis=0} : f32[{{2*past+1}},32]\n  %1 = tanh(%0) : f32[{{2*past+1}},32]\n  output y = %1\n}\n"},
		{"f32 scaled by a broadcast, the concat an output too", "graph k {\n  input %a : f32[3,{{past}},4]\n  input %b : f32[3,2,4]\n  input %s : f32[4]\n" +
			"  %0 = concat(%b, %a) {axis=1} : f32[3,{{past+2}},4]\n  %1 = broadcast_in_dim(%s) {dims=[2], shape=[3,{{past+2}},4]} : f32[3,{{past+2}},4]\n" +
			"  %2 = mul(%0, %1) : f32[3,{{past+2}},4]\n  output y = %2\n  output present = %0\n}\n"},
		{"bf16 operands computed, an output of other sizes", "graph k {\n  input %a : bf16[{{past}},6]\n  input %b : bf16[1,6]\n  %0 = exp(%a) : bf16[{{past}},6]\n" +
			"  %1 = neg(%b) : bf16[1,6]\n  %2 = concat(%0, %1) {axis=0} : bf16[{{past+1}},6]\n  output y = %2\n  output e = %0\n}\n"},
		{"i32 iota selecting between two concats", "graph k {\n  input %a : i32[2,{{past}},3]\n  input %b : i32[2,1,3]\n  input %c : i32[2,{{past}},3]\n" +
			"  %0 = concat(%a, %b) {axis=1} : i32[2,{{past+1}},3]\n  %1 = concat(%b, %c) {axis=1} : i32[2,{{past+1}},3]\n" +
			"  %2 = iota() {dim=2, dtype=i32, shape=[2,{{past+1}},3]} : i32[2,{{past+1}},3]\n  %3 = constant() {shape=[], dtype=i32, value=[1]} : i32[]\n" +
			"  %4 = broadcast_in_dim(%3) {dims=[], shape=[2,{{past+1}},3]} : i32[2,{{past+1}},3]\n  %5 = lt(%2, %4) : bool[2,{{past+1}},3]\n" +
			"  %6 = select(%5, %0, %1) : i32[2,{{past+1}},3]\n  output y = %6\n}\n"},
		// Literal tensors' sizes are their own: read at their strides at every run.
		{"f32 a literal tensor as an operand", "graph k {\n  input %a : f32[{{past}},4]\n  %0 = constant() {shape=[2,4], dtype=f32, value=[1,-2,3.5,0.25,-7,8,0.125,-0.5]} : f32[2,4]\n" +
			"  %1 = concat(%a, %0) {axis=0} : f32[{{past+2}},4]\n  output y = %1\n}\n"},
		{"f16 a literal tensor under neg, broadcast beside", "graph k {\n  input %a : f16[2,{{past}},4]\n  %0 = constant() {shape=[2,1,4], dtype=f16, value=[1,-2,3.5,0.25,-7,8,0.125,-0.5]} : f16[2,1,4]\n" +
			"  %1 = concat(%0, %a) {axis=1} : f16[2,{{past+1}},4]\n  %2 = neg(%1) : f16[2,{{past+1}},4]\n" +
			"  %3 = constant() {shape=[4], dtype=f16, value=[0.5,1,-1.5,2]} : f16[4]\n  %4 = broadcast_in_dim(%3) {dims=[2], shape=[2,{{past+1}},4]} : f16[2,{{past+1}},4]\n" +
			"  %5 = mul(%2, %4) : f16[2,{{past+1}},4]\n  output y = %5\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkConcatKernel(t, p, "k0_concat_fused", tc.src, bound, true) })
	}
}
