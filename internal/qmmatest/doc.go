// Package qmmatest builds the quantized tensor-core GEMMs that the code generators' tests
// compile (codegen/qmma takes them) and draws their weights as a checkpoint's, so codegen/ptx's
// tests and codegen/nvvm's (which holds its kernel to codegen/ptx's bit for bit) run the same
// layouts on the same values.
//
//	src := qmmatest.Source(qmmatest.Case{Bits: 4, Group: 32, Zero: true, QD: "u8", DT: "f16", M: 24, N: 40, K: 128})
//	in := inputsFor(parse(src))     // the package's own draw of every input
//	qmmatest.Quantize(in, 4, rng) // q, zero points and scales as a checkpoint's
package qmmatest
