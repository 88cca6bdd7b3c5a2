package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestApproxBounds runs the .approx instructions over many inputs and checks
// the error bounds the PTX ISA documents for them. (The simulator returns the
// correctly rounded value; the test guards any cheaper implementation.)
// ex2.approx.f16 has relative error at most 2^-9.9 and
// .bf16 2^-7; tanh.approx.f16 absolute error at most 2^-10.987 and .bf16
// 2^-8. rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 work on the upper word
// of their operand (20 mantissa bits) and zero the low 32 bits of the
// result, which bounds their relative error by 2^-19 (2^-20 from the
// truncated input, 2^-21 from rounding the result). The ISA gives no bound
// for rsqrt.approx.f64, a software sequence; the simulator rounds it
// correctly and the test holds it to that.
func TestApproxBounds(t *testing.T) {
	cases := []struct {
		op, typ string // typ: the element type in memory (f16x2 holds two f16)
		target  string
		ref     func(float64) float64
		lo, hi  float64
		rel     bool
		bound   float64
	}{
		{"ex2.approx.ftz.f32", "f32", "sm_80", math.Exp2, -126, 127, true, 0x1p-22},        // 2 ulp
		{"lg2.approx.ftz.f32", "f32", "sm_80", math.Log2, 0.5, 2, false, math.Exp2(-22.6)}, // absolute, near 1
		{"sin.approx.ftz.f32", "f32", "sm_80", math.Sin, -math.Pi, math.Pi, false, math.Exp2(-20.9)},
		{"cos.approx.ftz.f32", "f32", "sm_80", math.Cos, -math.Pi, math.Pi, false, math.Exp2(-20.9)},
		{"rsqrt.approx.ftz.f32", "f32", "sm_80", func(x float64) float64 { return 1 / math.Sqrt(x) }, 1e-30, 1e30, true, math.Exp2(-22.9)},
		{"rcp.approx.ftz.f32", "f32", "sm_80", func(x float64) float64 { return 1 / x }, -1e30, 1e30, true, 0x1p-23},
		{"sqrt.approx.ftz.f32", "f32", "sm_80", math.Sqrt, 0, 1e30, true, 0x1p-23},
		{"tanh.approx.f32", "f32", "sm_80", math.Tanh, -20, 20, true, 0x1p-11},
		{"ex2.approx.f16", "f16", "sm_80", math.Exp2, -14, 15.5, true, math.Exp2(-9.9)},
		{"ex2.approx.f16x2", "f16x2", "sm_80", math.Exp2, -14, 15.5, true, math.Exp2(-9.9)},
		{"ex2.approx.ftz.bf16", "bf16", "sm_90", math.Exp2, -100, 100, true, 0x1p-7},
		{"ex2.approx.ftz.bf16x2", "bf16x2", "sm_90", math.Exp2, -100, 100, true, 0x1p-7},
		{"tanh.approx.f16", "f16", "sm_80", math.Tanh, -8, 8, false, math.Exp2(-10.987)},
		{"tanh.approx.f16x2", "f16x2", "sm_80", math.Tanh, -8, 8, false, math.Exp2(-10.987)},
		{"tanh.approx.bf16", "bf16", "sm_90", math.Tanh, -8, 8, false, 0x1p-8},
		{"tanh.approx.bf16x2", "bf16x2", "sm_90", math.Tanh, -8, 8, false, 0x1p-8},
		{"rcp.approx.ftz.f64", "f64", "sm_80", func(x float64) float64 { return 1 / x }, -1e300, 1e300, true, 0x1p-19},
		{"rsqrt.approx.ftz.f64", "f64", "sm_80", func(x float64) float64 { return 1 / math.Sqrt(x) }, 1e-300, 1e300, true, 0x1p-19},
		{"rsqrt.approx.f64", "f64", "sm_80", func(x float64) float64 { return 1 / math.Sqrt(x) }, 1e-300, 1e300, true, 0x1p-53},
	}
	const n = 4096
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			reg, size, tiny := map[string]string{"f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32", "f32": "f32", "f64": "f64"}[c.typ], 2, 1e-300
			var enc func(float64) uint64
			var dec func(uint64) float64
			switch c.typ {
			case "f16", "f16x2":
				enc, dec = func(x float64) uint64 { return encode(x, fmtF16, rn) }, f16
			case "bf16", "bf16x2":
				enc, dec = func(x float64) uint64 { return encode(x, fmtBF16, rn) }, func(b uint64) float64 { return fval(tBF16, b) }
			case "f32":
				size, tiny, enc, dec = 4, 1e-30, func(x float64) uint64 { return uint64(math.Float32bits(float32(x))) }, f32
			default:
				size, enc, dec = 8, math.Float64bits, f64
			}
			step := size // bytes per thread
			if reg == "b32" {
				step = 4
			}
			src := strings.Replace(kernel(".param .u64 p", fmt.Sprintf(`
	.reg .b32 %%r<4>;
	.reg .%s %%x<3>;
	.reg .b64 %%rd<4>;
	ld.param.u64 %%rd1, [p];
	mov.u32 %%r1, %%tid.x;
	mov.u32 %%r2, %%ctaid.x;
	mov.u32 %%r3, %%ntid.x;
	mad.lo.u32 %%r1, %%r2, %%r3, %%r1;
	mul.wide.u32 %%rd2, %%r1, %d;
	add.s64 %%rd3, %%rd1, %%rd2;
	ld.global.%s %%x1, [%%rd3];
	%s %%x2, %%x1;
	st.global.%s [%%rd3], %%x2;`, reg, step, reg, c.op, reg)), "sm_80", c.target, 1)
			xs := make([]float64, n)
			buf := make([]byte, n*size)
			for i := range xs {
				f := float64(i) / (n - 1)
				v := c.lo + f*(c.hi-c.lo)
				if c.hi > 1e20 { // log-spaced magnitudes
					lo, hi := math.Max(math.Abs(c.lo), tiny), math.Abs(c.hi)
					v = math.Exp(math.Log(lo) + f*(math.Log(hi)-math.Log(lo)))
					if c.lo < 0 && i%2 == 1 {
						v = -v
					}
				}
				b := enc(v)
				xs[i] = dec(b)
				for j := 0; j < size; j++ {
					buf[i*size+j] = byte(b >> (8 * j))
				}
			}
			dev := NewDevice()
			p := upload(t, dev, buf)
			threads := n * size / step
			if _, err := load(t, dev, src).Launch("k", grid(threads/256, 256), p); err != nil {
				t.Fatal(err)
			}
			out := download(t, dev, p, n*size)
			worst := 0.0
			for i, x := range xs {
				var b uint64
				for j := size - 1; j >= 0; j-- {
					b = b<<8 | uint64(out[i*size+j])
				}
				if c.typ == "f64" && strings.Contains(c.op, "ftz") && b&0xFFFFFFFF != 0 {
					t.Fatalf("%s(%g) = %#x: the low 32 bits are not zero", c.op, x, b)
				}
				g, want := dec(b), c.ref(x)
				e := math.Abs(g - want)
				if c.rel {
					e /= math.Abs(want)
				}
				if want == 0 || math.IsInf(want, 0) {
					continue
				}
				worst = math.Max(worst, e)
				if e > c.bound {
					t.Fatalf("%s(%g) = %g, want %g: error %g exceeds %g", c.op, x, g, want, e, c.bound)
				}
			}
			t.Logf("worst error %.3g (bound %.3g)", worst, c.bound)
			assembles(t, src, c.target)
		})
	}
}
