package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// fp8 values (f8e4m3, f8e5m2) live in f32 registers like f16 and bf16: every op that makes one
// rounds it back to the dtype (round). Memory holds one byte per element. The conversions are
// sm_89/sm_90's: cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 packs two f32 into a .b16 (the first
// operand into the upper byte), cvt.rn.f16x2.{e4m3x2,e5m2x2} unpacks a .b16 into two f16 exactly.

// usesFP8 reports whether any value of the kernel's graph has an fp8 dtype.
func usesFP8(k Kernel) bool {
	for _, v := range k.Graph.Values {
		if v.Type.DType.IsFP8() {
			return true
		}
	}
	return false
}

// checkFP8 refuses fp8 kernels for targets without fp8 conversions.
func checkFP8(k Kernel, t Target) error {
	if !usesFP8(k) || t.SM >= 89 {
		return nil
	}
	for _, v := range k.Graph.Values {
		if v.Type.DType.IsFP8() {
			return fmt.Errorf("%s: %s: %s needs sm_89 or sm_90 (cvt .e4m3x2/.e5m2x2); the target is sm_%d",
				k.Name, k.Graph.Format(v), v.Type.DType, t.SM)
		}
	}
	return nil
}

// ptxVersion is the PTX ISA version a module for t declares: 7.8 (CUDA 11.8's ptxas) unless an
// fp8 kernel targets sm_89, whose fp8 cvt needs 8.1, or a kernel runs the fp8 GEMM, whose mma
// needs 8.4 on sm_89 and sm_90 alike (both: CUDA 12's ptxas).
func ptxVersion(kernels []Kernel, t Target) string {
	for _, k := range kernels {
		for _, v := range k.Graph.Values {
			if fp8Dot(v) && t.SM >= 89 {
				return "8.4"
			}
		}
	}
	if t.SM == 89 {
		for _, k := range kernels {
			if usesFP8(k) {
				return "8.1"
			}
		}
	}
	return "7.8"
}

func fp8Name(d ir.DType) string {
	if d == ir.F8E5M2 {
		return "e5m2x2"
	}
	return "e4m3x2"
}

// narrowFP8 converts an f32 register to the fp8 image in the low byte of a .b16 (and the high
// byte: both operands are the value), rounding to nearest even with satfinite.
func (e *emitter) narrowFP8(d ir.DType, f string) string {
	h := e.b.reg(rB16)
	e.b.ins("cvt.rn.satfinite."+fp8Name(d)+".f32", h, f, f)
	return h
}

// widenFP8 converts the fp8 image in the low byte of h to f32 exactly (through f16, which holds
// every fp8 value).
func (e *emitter) widenFP8(d ir.DType, h string) val {
	pair := e.b.reg(rU32)
	e.b.ins("cvt.rn.f16x2."+fp8Name(d), pair, h)
	lo := e.b.reg(rB16)
	e.b.ins("cvt.u16.u32", lo, pair)
	return e.op(d, "cvt.f32.f16", lo)
}

// fp8FromMem widens a byte loaded into a 32-bit register.
func (e *emitter) fp8FromMem(d ir.DType, r string) val {
	h := e.b.reg(rB16)
	e.b.ins("cvt.u16.u32", h, r)
	return e.widenFP8(d, h)
}

// fp8ToMem narrows a register value to the 32-bit register st.u8 writes.
func (e *emitter) fp8ToMem(v val) string {
	h := e.narrowFP8(v.dt, e.reg(v))
	r := e.b.reg(rU32)
	e.b.ins("cvt.u32.u16", r, h)
	return r
}
