package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
)

// The oracle below is written from the formats' definitions (OCP OFP8, PTX ISA "cvt"), sharing
// nothing with fp8.go: a code's value comes from its bit fields, and rounding is a brute-force
// search for the nearest finite code of the input's sign (ties to the even code), which gives
// .satfinite's clamping for free. python3-torch 1.13 has no float8 to compare with.

type f8spec struct {
	name       string
	ebits      int
	bias       int
	infAndNaNs bool // IEEE-like: exponent all ones is inf (mantissa 0) or NaN (E5M2)
}

var f8specs = []f8spec{{"e4m3x2", 4, 7, false}, {"e5m2x2", 5, 15, true}}

// value of code c: (ok=false) for NaN; ±inf for E5M2's infinities.
func (s f8spec) value(c uint8) (float64, bool) {
	mbits := 7 - s.ebits
	e := int(c>>mbits) & (1<<s.ebits - 1)
	m := int(c) & (1<<mbits - 1)
	top := 1<<s.ebits - 1
	if s.infAndNaNs && e == top {
		if m != 0 {
			return 0, false
		}
		if c&0x80 != 0 {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if !s.infAndNaNs && e == top && m == 1<<mbits-1 {
		return 0, false
	}
	var mag float64
	if e == 0 {
		mag = float64(m) / float64(int(1)<<mbits) * math.Pow(2, float64(1-s.bias))
	} else {
		mag = (1 + float64(m)/float64(int(1)<<mbits)) * math.Pow(2, float64(e-s.bias))
	}
	if c&0x80 != 0 {
		return -mag, true
	}
	return mag, true
}

// round is .rn.satfinite by search.
func (s f8spec) round(x float32) uint8 {
	if x != x {
		return 0x7F
	}
	var lo uint8
	if math.Signbit(float64(x)) {
		lo = 0x80
	}
	xb := new(big.Float).SetPrec(200).SetFloat64(float64(x))
	if math.IsInf(float64(x), 0) {
		xb = new(big.Float).SetPrec(200).SetMantExp(big.NewFloat(math.Copysign(1, float64(x))), 200)
	}
	best, bestD := -1, new(big.Float)
	for c := int(lo); c < int(lo)+0x80; c++ {
		v, ok := s.value(uint8(c))
		if !ok || math.IsInf(v, 0) {
			continue
		}
		d := new(big.Float).SetPrec(200).Sub(xb, new(big.Float).SetFloat64(v))
		d.Abs(d)
		if best < 0 || d.Cmp(bestD) < 0 || d.Cmp(bestD) == 0 && c&1 == 0 {
			best, bestD = c, d
		}
	}
	return uint8(best)
}

// fp8Module converts in both directions for one format: pack takes f32 pairs to .b16, unpack
// .b16 to f16x2.
func fp8Module(target, version, f string) string {
	return fmt.Sprintf(`.version %s
.target %s
.address_size 64
.visible .entry pack(.param .u64 in, .param .u64 out)
{
	.reg .b64 %%rd<5>;
	.reg .b32 %%r<2>;
	.reg .f32 %%f<3>;
	.reg .b16 %%h<2>;
	ld.param.u64 %%rd1, [in];
	ld.param.u64 %%rd2, [out];
	mov.u32 %%r1, %%tid.x;
	mul.wide.u32 %%rd3, %%r1, 8;
	add.u64 %%rd3, %%rd1, %%rd3;
	ld.global.f32 %%f1, [%%rd3];
	ld.global.f32 %%f2, [%%rd3+4];
	cvt.rn.satfinite.%[3]s.f32 %%h1, %%f1, %%f2;
	mul.wide.u32 %%rd4, %%r1, 2;
	add.u64 %%rd4, %%rd2, %%rd4;
	st.global.b16 [%%rd4], %%h1;
	ret;
}
.visible .entry unpack(.param .u64 in, .param .u64 out)
{
	.reg .b64 %%rd<5>;
	.reg .b32 %%r<3>;
	.reg .b16 %%h<2>;
	ld.param.u64 %%rd1, [in];
	ld.param.u64 %%rd2, [out];
	mov.u32 %%r1, %%tid.x;
	mul.wide.u32 %%rd3, %%r1, 2;
	add.u64 %%rd3, %%rd1, %%rd3;
	ld.global.b16 %%h1, [%%rd3];
	cvt.rn.f16x2.%[3]s %%r2, %%h1;
	mul.wide.u32 %%rd4, %%r1, 4;
	add.u64 %%rd4, %%rd2, %%rd4;
	st.global.b32 [%%rd4], %%r2;
	ret;
}
`, version, target, f)
}

// fp8Sweep is the f32 inputs: every code's value, the midpoints between neighbouring codes (ties)
// and their f32 neighbours, around the largest finite, subnormals of both formats and of f32,
// ±0, ±inf, NaNs and random values over the whole f32 range.
func fp8Sweep(s f8spec) []float32 {
	var xs []float32
	add := func(f float64) {
		x := float32(f)
		xs = append(xs, x, -x, math.Nextafter32(x, 0), math.Nextafter32(x, float32(math.Inf(1))))
	}
	var prev float64
	for c := 0; c < 0x80; c++ {
		v, ok := s.value(uint8(c))
		if !ok || math.IsInf(v, 0) {
			continue
		}
		add(v)
		if c > 0 {
			add((prev + v) / 2)
		}
		prev = v
	}
	// prev is the largest finite; its ulp is the gap to the previous code.
	for _, f := range []float64{prev * 1.0625, prev * 1.125, prev * 1.25, prev * 2, 1e30, math.MaxFloat32, 0x1p-126, 0x1p-149, 0x1p-30, 0x1p-20} {
		add(f)
	}
	xs = append(xs, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0xFFC00000), math.Float32frombits(0x7F800001), math.Float32frombits(0xFFFFFFFF))
	r := rand.New(rand.NewPCG(7, uint64(s.ebits)))
	for range 2000 {
		xs = append(xs, math.Float32frombits(r.Uint32()))
		xs = append(xs, float32(r.NormFloat64()*prev/4))
	}
	if len(xs)%2 == 1 {
		xs = append(xs, 0)
	}
	return xs
}

func TestFP8Conversions(t *testing.T) {
	for _, s := range f8specs {
		t.Run(s.name, func(t *testing.T) {
			dev := NewDevice()
			m := load(t, dev, fp8Module("sm_90", "7.8", s.name))

			// Every one of the 256 codes, unpacked in pairs (c, 255-c).
			codes := make([]byte, 512)
			for c := 0; c < 256; c++ {
				binary.LittleEndian.PutUint16(codes[2*c:], uint16(c)<<8|uint16(255-c))
			}
			in := upload(t, dev, codes)
			out, _ := dev.Alloc(4 * 256)
			if _, err := m.Launch("unpack", grid(1, 256), in, out); err != nil {
				t.Fatal(err)
			}
			res := bytesU32s(download(t, dev, out, 4*256))
			for c := 0; c < 256; c++ {
				for _, p := range []struct {
					code int
					h    uint64
				}{{c, uint64(res[c] >> 16)}, {255 - c, uint64(res[c] & 0xFFFF)}} {
					want, ok := s.value(uint8(p.code))
					got := f16(p.h)
					if !ok {
						if p.h != 0x7FFF {
							t.Errorf("unpack %#02x (NaN) = f16 %#04x, want 0x7fff", p.code, p.h)
						}
						continue
					}
					if got != want || math.Signbit(got) != math.Signbit(want) {
						t.Errorf("unpack %#02x = f16 %#04x (%g), want %g", p.code, p.h, got, want)
					}
				}
			}

			// The f32 sweep, packed in pairs: a into the upper byte.
			xs := fp8Sweep(s)
			n := len(xs) / 2
			inF := upload(t, dev, f32sBytes(xs))
			outH, _ := dev.Alloc(2 * n)
			for lo := 0; lo < n; lo += 1024 {
				cnt := min(1024, n-lo)
				if _, err := m.Launch("pack", grid(1, cnt), inF+uint64(8*lo), outH+uint64(2*lo)); err != nil {
					t.Fatal(err)
				}
			}
			packed := download(t, dev, outH, 2*n)
			bad := 0
			for i := 0; i < n; i++ {
				h := binary.LittleEndian.Uint16(packed[2*i:])
				for _, p := range []struct {
					x   float32
					got uint8
				}{{xs[2*i], uint8(h >> 8)}, {xs[2*i+1], uint8(h)}} {
					if want := s.round(p.x); p.got != want && bad < 20 {
						bad++
						t.Errorf("pack %g (%#08x) = %#02x, want %#02x", p.x, math.Float32bits(p.x), p.got, want)
					}
				}
			}
			if n < 1000 {
				t.Errorf("the sweep has only %d pairs", n)
			}
		})
	}
}

// TestFP8Assembles: the conversion kernels are what ptxas 12.4 accepts for sm_89 (PTX ISA 8.1)
// and sm_90; CUDA 11.8's takes sm_90 at 7.8.
func TestFP8Assembles(t *testing.T) {
	ptxas.Require12(t)
	for _, s := range f8specs {
		for _, c := range []struct{ target, version string }{{"sm_89", "8.1"}, {"sm_90", "8.1"}} {
			if _, err := ptxas.Assemble12([]byte(fp8Module(c.target, c.version, s.name)), c.target); err != nil {
				t.Errorf("%s %s: %v", s.name, c.target, err)
			}
		}
		assembles(t, fp8Module("sm_90", "7.8", s.name), "sm_90")
	}
}

// opCasesFP8 are the forms beside the two the sweep covers: .relu, the f16x2 source, and the
// operand order.
var opCasesFP8 = []opCase{
	c32b16("cvt.rn.satfinite.e4m3x2.f32 %d, %a, %b", 0x38C0, fb(1), fb(-2)),
	c32b16("cvt.rn.satfinite.relu.e4m3x2.f32 %d, %a, %b", 0x3800, fb(1), fb(-2)),
	c32b16("cvt.rn.satfinite.relu.e5m2x2.f32 %d, %a, %b", 0x7F00, uint64(qnan32), fb(-0.0)),
	c32b16("cvt.rn.satfinite.e5m2x2.f32 %d, %a, %b", 0x7BFB, inf32, ninf32),
	{"cvt.rn.satfinite.e4m3x2.f16x2 %d, %a", "b16", []string{"b32"}, []uint64{0x3C00_DF00}, 0x38FE}, // 1, -448 (f16 -448 = 0xDF00)
	{"cvt.rn.satfinite.e5m2x2.f16x2 %d, %a", "b16", []string{"b32"}, []uint64{0x3C01_7C00}, 0x3C7B}, // 1+2^-10 → 1; inf → max
	{"cvt.rn.relu.f16x2.e4m3x2 %d, %a", "b32", []string{"b16"}, []uint64{0xB87F}, 0x0000_7FFF},      // -1 → 0; NaN
	{"cvt.rn.f16x2.e5m2x2 %d, %a", "b32", []string{"b16"}, []uint64{0xFC01}, 0xFC00_0100},           // -inf; the smallest subnormal
}

func c32b16(inst string, want uint64, a, b uint64) opCase {
	return opCase{inst, "b16", []string{"b32", "b32"}, []uint64{a, b}, want}
}

func TestInstructionTableFP8(t *testing.T) {
	runOpTable(t, "sm_90", opCasesFP8, "sm_90")
}

func TestFP8DecodeErrors(t *testing.T) {
	for _, c := range []struct{ inst, want string }{
		{"cvt.rn.e4m3x2.f32 %h, %f, %f", "needs .satfinite"},
		{"cvt.satfinite.e4m3x2.f32 %h, %f, %f", "needs .rn"},
		{"cvt.rn.satfinite.e4m3x2.f64 %h, %d, %d", "converts .f32 or .f16x2"},
		{"cvt.rn.satfinite.f16x2.e5m2x2 %r, %h", "without .satfinite"},
		{"cvt.rn.satfinite.e4m3x2.f32 %h, %f", "number of operands"},
	} {
		src := kernel("", "\t.reg .b16 %h;\n\t.reg .f32 %f;\n\t.reg .f64 %d;\n\t.reg .b32 %r;\n\t"+c.inst+";\n\tret;")
		_, err := NewDevice().Load(src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.inst, err, c.want)
		}
	}
}
