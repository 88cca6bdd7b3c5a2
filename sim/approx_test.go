package sim

import (
	"fmt"
	"math"
	"testing"
)

// TestApproxBounds runs the .approx instructions over many inputs and checks
// the error bounds the PTX ISA documents for them. (The simulator returns the
// correctly rounded value; the test guards any cheaper implementation.)
func TestApproxBounds(t *testing.T) {
	cases := []struct {
		op     string
		ref    func(float64) float64
		lo, hi float64
		rel    bool    // relative (else absolute) error
		bound  float64 // from the ISA
	}{
		{"ex2.approx.ftz.f32", math.Exp2, -126, 127, true, 0x1p-22},        // 2 ulp
		{"lg2.approx.ftz.f32", math.Log2, 0.5, 2, false, math.Exp2(-22.6)}, // absolute, near 1
		{"sin.approx.ftz.f32", math.Sin, -math.Pi, math.Pi, false, math.Exp2(-20.9)},
		{"cos.approx.ftz.f32", math.Cos, -math.Pi, math.Pi, false, math.Exp2(-20.9)},
		{"rsqrt.approx.ftz.f32", func(x float64) float64 { return 1 / math.Sqrt(x) }, 1e-30, 1e30, true, math.Exp2(-22.9)},
		{"rcp.approx.ftz.f32", func(x float64) float64 { return 1 / x }, -1e30, 1e30, true, 0x1p-23},
		{"sqrt.approx.ftz.f32", math.Sqrt, 0, 1e30, true, 0x1p-23},
		{"tanh.approx.f32", math.Tanh, -20, 20, true, 0x1p-11},
	}
	const n = 4096
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			src := kernel(".param .u64 p", fmt.Sprintf(`
	.reg .b32 %%r<4>;
	.reg .f32 %%f<3>;
	.reg .b64 %%rd<4>;
	ld.param.u64 %%rd1, [p];
	mov.u32 %%r1, %%tid.x;
	mov.u32 %%r2, %%ctaid.x;
	mov.u32 %%r3, %%ntid.x;
	mad.lo.u32 %%r1, %%r2, %%r3, %%r1;
	mul.wide.u32 %%rd2, %%r1, 4;
	add.s64 %%rd3, %%rd1, %%rd2;
	ld.global.f32 %%f1, [%%rd3];
	%s %%f2, %%f1;
	st.global.f32 [%%rd3], %%f2;`, c.op))
			xs := make([]float32, n)
			for i := range xs {
				f := float64(i) / (n - 1)
				if c.hi > 1e20 || c.lo < -1e20 { // log-spaced magnitudes
					lo, hi := math.Max(math.Abs(c.lo), 1e-30), math.Abs(c.hi)
					v := math.Exp(math.Log(lo) + f*(math.Log(hi)-math.Log(lo)))
					if c.lo < 0 && i%2 == 1 {
						v = -v
					}
					xs[i] = float32(v)
				} else {
					xs[i] = float32(c.lo + f*(c.hi-c.lo))
				}
			}
			dev := NewDevice()
			p := upload(t, dev, f32sBytes(xs))
			if _, err := load(t, dev, src).Launch("k", grid(n/256, 256), p); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for i, g := range bytesF32s(download(t, dev, p, 4*n)) {
				want := c.ref(float64(xs[i]))
				e := math.Abs(float64(g) - want)
				if c.rel {
					e /= math.Abs(want)
				}
				if want == 0 || math.IsInf(want, 0) {
					continue
				}
				worst = math.Max(worst, e)
				if e > c.bound {
					t.Fatalf("%s(%g) = %g, want %g: error %g exceeds %g", c.op, xs[i], g, want, e, c.bound)
				}
			}
			t.Logf("worst error %.3g (bound %.3g)", worst, c.bound)
			assembles(t, src)
		})
	}
}
