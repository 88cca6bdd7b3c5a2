// Package qmma decides which products the tensor-core GEMM computes over quantized weights: a
// dot_general of f16 or bf16 operands whose weight (rhs) is a dequantize of int8 or packed int4
// integers (docs/ops.md), or an f32 dequantize cast to the operands' dtype, and which the GEMV
// template does not take (more than gemv.MaxM rows: prefill, batched decode). The kernel copies
// the integer tile to shared memory and forms the mma's B fragments by dequantizing in
// registers (codegen/ptx's mma_dequant.go), so no float copy of the weight is ever written.
//
// The decision lives here, apart from the code that emits the kernel, because two packages must
// agree on it: the passes place the dequantize in the product's kernel (a prologue) exactly
// when codegen/ptx will read it that way.
//
//	dq, ok := qmma.Fits(dot) // x[128,2048]·dequantize(q u8[512,1024], s, z){bits=4}ᵀ, f16
//	// ok, dq = the dequantize: the kernel reads q (0.5 B a weight), s and z
package qmma
