package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
)

// An opCase runs one instruction on register operands %a, %b, %c (types
// st) into %d (type dt) and compares the raw bits of %d. Expected values
// are worked out by hand from the PTX ISA's definition of each instruction.
type opCase struct {
	inst string
	dt   string
	st   []string
	src  []uint64
	want uint64
}

const (
	one32  = 0x3F800000
	two32  = 0x40000000
	inf32  = 0x7F800000
	ninf32 = 0xFF800000
	max32  = 0x7F7FFFFF
	qnan32 = 0x7FC00000
)

func s32(v int32) uint64  { return uint64(uint32(v)) }
func s64(v int64) uint64  { return uint64(v) }
func fb(v float32) uint64 { return uint64(math.Float32bits(v)) }
func db(v float64) uint64 { return math.Float64bits(v) }

func b32s(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = "b32"
	}
	return s
}

func c32(inst string, want uint64, src ...uint64) opCase {
	return opCase{inst, "b32", b32s(len(src)), src, want}
}

func c64(inst string, want uint64, src ...uint64) opCase {
	st := make([]string, len(src))
	for i := range st {
		st[i] = "b64"
	}
	return opCase{inst, "b64", st, src, want}
}

var opCases = []opCase{
	// f32 add/mul with every rounding mode: 1 + 1.5*2^-24 lies between 1 and 1+2^-23.
	c32("add.rn.f32 %d, %a, %b", 0x3F800001, one32, 0x33C00000),
	c32("add.rz.f32 %d, %a, %b", one32, one32, 0x33C00000),
	c32("add.rm.f32 %d, %a, %b", one32, one32, 0x33C00000),
	c32("add.rp.f32 %d, %a, %b", 0x3F800001, one32, 0x33C00000),
	c32("add.rm.f32 %d, %a, %b", 0xBF800001, 0xBF800000, 0xB3C00000),
	c32("add.rp.f32 %d, %a, %b", 0xBF800000, 0xBF800000, 0xB3C00000),
	// A tie (1 + 2^-24) goes to the even neighbour, 1.0.
	c32("add.f32 %d, %a, %b", one32, one32, 0x33800000),
	c32("add.f32 %d, %a, %b", 0x7FFFFFFF, qnan32, one32),             // NaN results are the canonical NaN
	c32("sub.f32 %d, %a, %b", 0x7FFFFFFF, inf32, inf32),              // inf - inf
	c32("add.f32 %d, %a, %b", 0x80000000, 0x80000000, 0x80000000),    // -0 + -0
	c32("add.f32 %d, %a, %b", 0, 0x80000000, 0),                      // -0 + +0 = +0 in rn
	c32("add.rm.f32 %d, %a, %b", 0x80000000, 0x3F800000, 0xBF800000), // x - x = -0 in rm
	c32("mul.rn.f32 %d, %a, %b", inf32, max32, two32),
	c32("mul.rz.f32 %d, %a, %b", max32, max32, two32),
	c32("mul.rm.f32 %d, %a, %b", max32, max32, two32),
	c32("mul.rm.f32 %d, %a, %b", ninf32, 0xFF7FFFFF, two32),
	c32("mul.rp.f32 %d, %a, %b", inf32, max32, two32),
	c32("mul.f32 %d, %a, %b", 0x00400000, 0x00800000, 0x3F000000),     // result subnormal
	c32("mul.ftz.f32 %d, %a, %b", 0, 0x00800000, 0x3F000000),          // flushed
	c32("add.ftz.f32 %d, %a, %b", 0x80000000, 0x80000001, 0x80000000), // subnormal input flushed
	c32("mul.sat.f32 %d, %a, %b", one32, two32, two32),
	c32("add.sat.f32 %d, %a, %b", 0, 0xBF800000, 0),
	c32("add.sat.f32 %d, %a, %b", 0, qnan32, 0), // .sat turns NaN into +0
	// fma rounds once: (1+2^-23)(1-2^-24) - 1 = 2^-24 - 2^-47 = 0x337FFFFE exactly
	// (a separate mul would round the product to 1 and give 0).
	c32("fma.rn.f32 %d, %a, %b, %c", 0x337FFFFE, 0x3F800001, 0x3F7FFFFF, 0xBF800000),
	c32("fma.rz.f32 %d, %a, %b, %c", 0x3F800000, 0x3F800001, 0x3F7FFFFF, 0),
	c32("fma.rp.f32 %d, %a, %b, %c", 0x3F800001, 0x3F800001, 0x3F7FFFFF, 0),
	c32("mad.rn.f32 %d, %a, %b, %c", 0x337FFFFE, 0x3F800001, 0x3F7FFFFF, 0xBF800000),
	c32("div.rn.f32 %d, %a, %b", 0x3EAAAAAB, one32, 0x40400000),
	c32("div.rz.f32 %d, %a, %b", 0x3EAAAAAA, one32, 0x40400000),
	c32("div.rm.f32 %d, %a, %b", 0x3EAAAAAA, one32, 0x40400000),
	c32("div.rp.f32 %d, %a, %b", 0x3EAAAAAB, one32, 0x40400000),
	c32("div.rm.f32 %d, %a, %b", 0xBEAAAAAB, 0xBF800000, 0x40400000),
	c32("div.full.f32 %d, %a, %b", 0x3F000000, one32, two32),
	c32("div.approx.f32 %d, %a, %b", 0x3F000000, one32, two32),
	c32("div.rn.f32 %d, %a, %b", inf32, one32, 0),
	c32("div.rn.f32 %d, %a, %b", 0x7FFFFFFF, 0, 0),
	c32("rcp.rn.f32 %d, %a", 0x3EAAAAAB, 0x40400000),
	c32("rcp.rn.f32 %d, %a", ninf32, 0x80000000),
	c32("sqrt.rn.f32 %d, %a", 0x3FB504F3, two32),
	c32("sqrt.rp.f32 %d, %a", 0x3FB504F4, two32),
	c32("sqrt.rz.f32 %d, %a", 0x3FB504F3, two32),
	c32("sqrt.rn.f32 %d, %a", 0x7FFFFFFF, 0xBF800000),
	c32("sqrt.rn.f32 %d, %a", 0x80000000, 0x80000000),
	c32("sqrt.approx.f32 %d, %a", 0x40400000, 0x41100000),
	c32("rsqrt.approx.f32 %d, %a", 0x3F000000, 0x40800000),
	c32("ex2.approx.f32 %d, %a", 0x41000000, 0x40400000),
	c32("ex2.approx.ftz.f32 %d, %a", 0, ninf32),
	c32("lg2.approx.f32 %d, %a", 0x41000000, 0x43800000),
	c32("lg2.approx.f32 %d, %a", ninf32, 0),
	c32("abs.f32 %d, %a", 0, 0x80000000),
	c32("neg.f32 %d, %a", 0xFFC00000, qnan32),
	c32("abs.ftz.f32 %d, %a", 0, 0x80000001),
	c32("min.f32 %d, %a, %b", one32, qnan32, one32),
	c32("max.f32 %d, %a, %b", one32, one32, qnan32),
	c32("min.f32 %d, %a, %b", 0x7FFFFFFF, qnan32, qnan32),
	c32("min.NaN.f32 %d, %a, %b", 0x7FFFFFFF, qnan32, one32),
	c32("min.f32 %d, %a, %b", 0x80000000, 0, 0x80000000),
	c32("max.f32 %d, %a, %b", 0, 0x80000000, 0),
	c32("min.f32 %d, %a, %b", ninf32, ninf32, one32),
	c32("copysign.f32 %d, %a, %b", 0xC0000000, 0xBF800000, two32),
	// Integer arithmetic: wrap-around, saturation, high halves, widening.
	c32("add.u32 %d, %a, %b", 0, 0xFFFFFFFF, 1),
	c32("add.sat.s32 %d, %a, %b", 0x7FFFFFFF, 0x7FFFFFFF, 1),
	c32("sub.sat.s32 %d, %a, %b", 0x80000000, 0x80000000, 1),
	c32("sub.s32 %d, %a, %b", 0x7FFFFFFF, 0x80000000, 1),
	c32("mul.lo.s32 %d, %a, %b", s32(-6), s32(-2), 3),
	c32("mul.hi.u32 %d, %a, %b", 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFF),
	c32("mul.hi.s32 %d, %a, %b", 0, 0xFFFFFFFF, 0xFFFFFFFF),
	c32("mul.hi.s32 %d, %a, %b", 0xFFFFFFFF, s32(-2), 3),
	c32("mad.lo.s32 %d, %a, %b, %c", 7, 2, 3, 1),
	c32("mad.hi.u32 %d, %a, %b, %c", 0, 0xFFFFFFFF, 0xFFFFFFFF, 2),
	c32("mad.hi.sat.s32 %d, %a, %b, %c", 0x7FFFFFFF, 0x40000000, 0x40000000, 0x7FFFFFFF),
	{"mul.wide.s32 %d, %a, %b", "b64", b32s(2), []uint64{s32(-2), 3}, s64(-6)},
	{"mul.wide.u32 %d, %a, %b", "b64", b32s(2), []uint64{0xFFFFFFFF, 2}, 0x1FFFFFFFE},
	{"mul.wide.u16 %d, %a, %b", "b32", []string{"b16", "b16"}, []uint64{0xFFFF, 0xFFFF}, 0xFFFE0001},
	{"mad.wide.s32 %d, %a, %b, %c", "b64", []string{"b32", "b32", "b64"}, []uint64{s32(-2), 3, 10}, 4},
	c64("mul.hi.u64 %d, %a, %b", 2, 1<<63, 4),
	c64("mul.hi.s64 %d, %a, %b", s64(-1), s64(-1), 2),
	c64("mul.hi.s64 %d, %a, %b", 0, s64(-1), s64(-1)),
	c64("mul.lo.u64 %d, %a, %b", 0xFFFFFFFE00000001, 0xFFFFFFFF, 0xFFFFFFFF),
	c32("div.s32 %d, %a, %b", s32(-3), s32(-7), 2),
	c32("rem.s32 %d, %a, %b", s32(-1), s32(-7), 2),
	c32("rem.s32 %d, %a, %b", 1, 7, s32(-2)),
	c32("div.u32 %d, %a, %b", 0xFFFFFFFF, 7, 0),
	c32("div.s32 %d, %a, %b", 0x80000000, 0x80000000, s32(-1)),
	c32("rem.s32 %d, %a, %b", 0, 0x80000000, s32(-1)),
	c64("div.s64 %d, %a, %b", 1<<63, 1<<63, s64(-1)),
	c64("div.u64 %d, %a, %b", 0x5555555555555555, s64(-1), 3),
	c32("min.s32 %d, %a, %b", s32(-1), s32(-1), 1),
	c32("min.u32 %d, %a, %b", 1, 0xFFFFFFFF, 1),
	c32("max.s32 %d, %a, %b", 1, s32(-1), 1),
	c32("abs.s32 %d, %a", 0x80000000, 0x80000000),
	c32("abs.s32 %d, %a", 5, s32(-5)),
	c32("neg.s32 %d, %a", s32(-5), 5),
	// Shifts: amounts at or beyond the width clamp to the width.
	c32("shl.b32 %d, %a, %b", 0x80000000, 1, 31),
	c32("shl.b32 %d, %a, %b", 0, 1, 32),
	c32("shl.b32 %d, %a, %b", 0, 1, 0xFFFFFFFF),
	c32("shr.u32 %d, %a, %b", 1, 0x80000000, 31),
	c32("shr.u32 %d, %a, %b", 0, 0x80000000, 32),
	c32("shr.s32 %d, %a, %b", 0xFFFFFFFF, s32(-8), 40),
	c32("shr.s32 %d, %a, %b", 0xFFFFFFFC, s32(-8), 1),
	c32("shr.s32 %d, %a, %b", 0, 8, 100),
	{"shl.b64 %d, %a, %b", "b64", []string{"b64", "b32"}, []uint64{1, 63}, 1 << 63},
	{"shl.b64 %d, %a, %b", "b64", []string{"b64", "b32"}, []uint64{1, 64}, 0},
	{"shr.s64 %d, %a, %b", "b64", []string{"b64", "b32"}, []uint64{1 << 63, 200}, s64(-1)},
	{"shl.b16 %d, %a, %b", "b16", []string{"b16", "b32"}, []uint64{1, 16}, 0},
	// Bit operations.
	c32("and.b32 %d, %a, %b", 0x0F00, 0xFF00, 0x0FF0),
	c32("or.b32 %d, %a, %b", 0xFFF0, 0xFF00, 0x0FF0),
	c32("xor.b32 %d, %a, %b", 0xF0F0, 0xFF00, 0x0FF0),
	c32("not.b32 %d, %a", 0xFFFF00FF, 0xFF00),
	c32("cnot.b32 %d, %a", 1, 0),
	c32("cnot.b32 %d, %a", 0, 5),
	c32("popc.b32 %d, %a", 32, 0xFFFFFFFF),
	{"popc.b64 %d, %a", "b32", []string{"b64"}, []uint64{0xFFFFFFFFFFFFFFFF}, 64},
	c32("clz.b32 %d, %a", 32, 0),
	c32("clz.b32 %d, %a", 0, 0x80000000),
	{"clz.b64 %d, %a", "b32", []string{"b64"}, []uint64{1}, 63},
	c32("brev.b32 %d, %a", 0x80000000, 1),
	c64("brev.b64 %d, %a", 1, 1<<63),
	c32("dp4a.u32.u32 %d, %a, %b, %c", 80, 0x01020304, 0x05060708, 10),               // 1*5+2*6+3*7+4*8 + 10
	c32("dp4a.s32.s32 %d, %a, %b, %c", 0xFFFFFFF7, 0xFF02FF04, 0x80017F02, s32(-20)), // 8-127+2+128 - 20
	c32("dp4a.u32.s32 %d, %a, %b, %c", 0xFFFFFF01, 0xFF, 0xFF, 0),                    // 255 * -1
	c32("dp4a.u32.u32 %d, %a, %b, %c", 0x3F803, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),  // wraps to 32 bits
	c32("dp2a.lo.s32.s32 %d, %a, %b, %c", 18, 0xFFFF0003, 0x7F80FE05, 1),             // 3*5 + -1*-2 + 1
	c32("dp2a.hi.s32.u32 %d, %a, %b, %c", 257, 0xFFFF0003, 0x7F80FE05, 0),            // 3*128 + -1*127
	c32("bfe.u32 %d, %a, %b, %c", 0x0F, 0xF0F0F0F0, 4, 8),
	c32("bfe.s32 %d, %a, %b, %c", 0xFFFFFFFF, 0x00000F00, 8, 4),
	c32("bfe.s32 %d, %a, %b, %c", 7, 0x00000700, 8, 4),
	c32("bfe.u32 %d, %a, %b, %c", 0, 0xFFFFFFFF, 4, 0),
	c32("bfe.s32 %d, %a, %b, %c", 0xFFFFFFFF, 0x80000000, 40, 4), // pos past the msb: copies of the sign
	c32("bfe.u32 %d, %a, %b, %c", 0xF, 0xF0000000, 28, 10),       // len runs past the msb
	{"bfi.b32 %d, %a, %b, %c, %e", "b32", b32s(4), []uint64{0xF, 0, 4, 4}, 0xF0},
	{"bfi.b32 %d, %a, %b, %c, %e", "b32", b32s(4), []uint64{0xFF, 0xFFFFFFFF, 28, 8}, 0xFFFFFFFF},
	{"bfi.b32 %d, %a, %b, %c, %e", "b32", b32s(4), []uint64{0, 0xFFFFFFFF, 30, 8}, 0x3FFFFFFF},
	c32("prmt.b32 %d, %a, %b, %c", 0x33221100, 0x33221100, 0x77665544, 0x3210),
	c32("prmt.b32 %d, %a, %b, %c", 0x77665544, 0x33221100, 0x77665544, 0x7654),
	c32("prmt.b32 %d, %a, %b, %c", 0x00112233, 0x33221100, 0x77665544, 0x0123),
	c32("prmt.b32 %d, %a, %b, %c", 0x000000FF, 0x00000080, 0, 0x4448),
	// Comparisons: ordered ones are false on NaN, unordered ones true.
	{"setp.lt.f32 %d, %a, %b", "pred", b32s(2), []uint64{qnan32, one32}, 0},
	{"setp.ltu.f32 %d, %a, %b", "pred", b32s(2), []uint64{qnan32, one32}, 1},
	{"setp.ne.f32 %d, %a, %b", "pred", b32s(2), []uint64{qnan32, qnan32}, 0},
	{"setp.neu.f32 %d, %a, %b", "pred", b32s(2), []uint64{qnan32, qnan32}, 1},
	{"setp.nan.f32 %d, %a, %b", "pred", b32s(2), []uint64{one32, qnan32}, 1},
	{"setp.num.f32 %d, %a, %b", "pred", b32s(2), []uint64{one32, one32}, 1},
	{"setp.eq.f32 %d, %a, %b", "pred", b32s(2), []uint64{0, 0x80000000}, 1},
	{"setp.lo.u32 %d, %a, %b", "pred", b32s(2), []uint64{1, 0xFFFFFFFF}, 1},
	{"setp.lt.s32 %d, %a, %b", "pred", b32s(2), []uint64{1, 0xFFFFFFFF}, 0},
	{"setp.hs.u64 %d, %a, %b", "pred", []string{"b64", "b64"}, []uint64{1 << 63, 1}, 1},
	{"setp.gt.and.s32 %d, %a, %b, %c", "pred", []string{"b32", "b32", "pred"}, []uint64{2, 1, 0}, 0},
	{"setp.gt.or.s32 %d, %a, %b, %c", "pred", []string{"b32", "b32", "pred"}, []uint64{0, 1, 1}, 1},
	{"setp.gt.xor.s32 %d, %a, %b, !%c", "pred", []string{"b32", "b32", "pred"}, []uint64{2, 1, 1}, 1},
	{"selp.b32 %d, %a, %b, %c", "b32", []string{"b32", "b32", "pred"}, []uint64{5, 6, 1}, 5},
	{"selp.b32 %d, %a, %b, %c", "b32", []string{"b32", "b32", "pred"}, []uint64{5, 6, 0}, 6},
	c32("slct.b32.s32 %d, %a, %b, %c", 5, 5, 6, 0),
	c32("slct.b32.s32 %d, %a, %b, %c", 6, 5, 6, s32(-1)),
	c32("slct.b32.f32 %d, %a, %b, %c", 6, 5, 6, 0xBF800000),
	c32("set.lt.u32.s32 %d, %a, %b", 0xFFFFFFFF, s32(-1), 0),
	c32("set.lt.f32.s32 %d, %a, %b", one32, s32(-1), 0),
	c32("set.gt.u32.f32 %d, %a, %b", 0, qnan32, 0),
	{"testp.subnormal.f32 %d, %a", "pred", b32s(1), []uint64{1}, 1},
	{"testp.normal.f32 %d, %a", "pred", b32s(1), []uint64{1}, 0},
	{"testp.notanumber.f32 %d, %a", "pred", b32s(1), []uint64{qnan32}, 1},
	{"testp.infinite.f32 %d, %a", "pred", b32s(1), []uint64{ninf32}, 1},
	// Conversions: integer rounding, saturation, NaN to 0, wrap-around.
	c32("cvt.rni.s32.f32 %d, %a", 2, fb(2.5)),
	c32("cvt.rni.s32.f32 %d, %a", 4, fb(3.5)),
	c32("cvt.rni.s32.f32 %d, %a", s32(-2), fb(-2.5)),
	c32("cvt.rzi.s32.f32 %d, %a", s32(-2), fb(-2.7)),
	c32("cvt.rmi.s32.f32 %d, %a", s32(-3), fb(-2.2)),
	c32("cvt.rpi.s32.f32 %d, %a", 3, fb(2.2)),
	c32("cvt.rzi.s32.f32 %d, %a", 0, qnan32),
	c32("cvt.rzi.s32.f32 %d, %a", 0x7FFFFFFF, fb(3e9)),
	c32("cvt.rzi.s32.f32 %d, %a", 0x80000000, fb(-3e9)),
	c32("cvt.rzi.s32.f32 %d, %a", 0x7FFFFFFF, inf32),
	c32("cvt.rzi.u32.f32 %d, %a", 0, fb(-1.5)),
	c32("cvt.rzi.u32.f32 %d, %a", 0xFFFFFFFF, fb(5e9)),
	{"cvt.rzi.s64.f64 %d, %a", "b64", []string{"b64"}, []uint64{db(-1e300)}, 1 << 63},
	{"cvt.rni.u8.f32 %d, %a", "b16", b32s(1), []uint64{fb(300)}, 255},
	{"cvt.rni.s8.f32 %d, %a", "b16", b32s(1), []uint64{fb(-300)}, 0xFF80}, // -128, sign-extended
	c32("cvt.rn.f32.s32 %d, %a", 0x4B800000, 16777217),                    // tie to even: 2^24
	c32("cvt.rz.f32.s32 %d, %a", 0x4B800001, 16777219),
	c32("cvt.rp.f32.s32 %d, %a", 0x4B800001, 16777217),
	c32("cvt.rm.f32.s32 %d, %a", 0xCB800001, s32(-16777217)),
	c32("cvt.rn.f32.u32 %d, %a", 0x4F800000, 0xFFFFFFFF),
	{"cvt.rn.f32.u64 %d, %a", "b32", []string{"b64"}, []uint64{0xFFFFFFFFFFFFFFFF}, 0x5F800000},
	{"cvt.rz.f32.u64 %d, %a", "b32", []string{"b64"}, []uint64{0xFFFFFFFFFFFFFFFF}, 0x5F7FFFFF},
	{"cvt.rn.f64.s64 %d, %a", "b64", []string{"b64"}, []uint64{1<<53 + 1}, db(1 << 53)},
	{"cvt.rp.f64.s64 %d, %a", "b64", []string{"b64"}, []uint64{1<<53 + 1}, db(1<<53 + 2)},
	{"cvt.rn.f32.f64 %d, %a", "b32", []string{"b64"}, []uint64{db(1.0 / 3)}, 0x3EAAAAAB},
	{"cvt.rz.f32.f64 %d, %a", "b32", []string{"b64"}, []uint64{db(1.0 / 3)}, 0x3EAAAAAA},
	{"cvt.rn.f32.f64 %d, %a", "b32", []string{"b64"}, []uint64{db(1e300)}, inf32},
	{"cvt.rz.f32.f64 %d, %a", "b32", []string{"b64"}, []uint64{db(1e300)}, max32},
	{"cvt.rn.f32.f64 %d, %a", "b32", []string{"b64"}, []uint64{db(0x1p-149 * 0.5)}, 0}, // tie with 0: even
	{"cvt.rp.f32.f64 %d, %a", "b32", []string{"b64"}, []uint64{db(0x1p-160)}, 1},
	{"cvt.f64.f32 %d, %a", "b64", b32s(1), []uint64{1}, db(0x1p-149)},
	{"cvt.rn.f16.f32 %d, %a", "b16", b32s(1), []uint64{fb(65520)}, 0x7C00},
	{"cvt.rz.f16.f32 %d, %a", "b16", b32s(1), []uint64{fb(65520)}, 0x7BFF},
	{"cvt.rn.f16.f32 %d, %a", "b16", b32s(1), []uint64{fb(1.0 / 3)}, 0x3555},
	{"cvt.rn.f16.f32 %d, %a", "b16", b32s(1), []uint64{fb(0x1p-24)}, 0x0001},
	{"cvt.rn.f16.f32 %d, %a", "b16", b32s(1), []uint64{fb(0x1p-25)}, 0x0000},
	{"cvt.rn.f16.f32 %d, %a", "b16", b32s(1), []uint64{fb(0x1.8p-25)}, 0x0001},
	{"cvt.rp.f16.f32 %d, %a", "b16", b32s(1), []uint64{fb(0x1p-30)}, 0x0001},
	{"cvt.rn.f16.f32 %d, %a", "b16", b32s(1), []uint64{fb(-2.5)}, 0xC100},
	{"cvt.rn.f16.f32 %d, %a", "b16", b32s(1), []uint64{qnan32}, 0x7FFF},
	{"cvt.f32.f16 %d, %a", "b32", []string{"b16"}, []uint64{0x3C00}, one32},
	{"cvt.f32.f16 %d, %a", "b32", []string{"b16"}, []uint64{0x0001}, 0x33800000},
	{"cvt.f32.f16 %d, %a", "b32", []string{"b16"}, []uint64{0xFC00}, ninf32},
	{"cvt.rn.bf16.f32 %d, %a", "b16", b32s(1), []uint64{0x3F808000}, 0x3F80},
	{"cvt.rn.bf16.f32 %d, %a", "b16", b32s(1), []uint64{0x3F818000}, 0x3F82},
	{"cvt.rz.bf16.f32 %d, %a", "b16", b32s(1), []uint64{0x3F81FFFF}, 0x3F81},
	{"cvt.f32.bf16 %d, %a", "b32", []string{"b16"}, []uint64{0x3F81}, 0x3F810000},
	c32("cvt.rna.tf32.f32 %d, %a", 0x3F802000, 0x3F801000),
	c32("cvt.rna.tf32.f32 %d, %a", 0x3F800000, 0x3F800FFF),
	c32("cvt.rna.tf32.f32 %d, %a", 0x7F800000, 0x7F7FFFFF), // rounds away past the largest tf32: inf
	c32("cvt.rna.tf32.f32 %d, %a", 0xFF800000, 0xFF7FFFFF),
	c32("cvt.rna.tf32.f32 %d, %a", 0x7F7FE000, 0x7F7FEFFF), // below the tie: the largest tf32
	c32("cvt.rni.f32.f32 %d, %a", two32, fb(2.5)),
	c32("cvt.rmi.f32.f32 %d, %a", 0xC0400000, fb(-2.5)),
	c32("cvt.sat.f32.f32 %d, %a", one32, fb(7)),
	c32("cvt.ftz.f32.f32 %d, %a", 0x80000000, 0x80000001),
	{"cvt.ftz.f32.f16 %d, %a", "b32", []string{"b16"}, []uint64{0x0001}, 0x33800000}, // .ftz is about f32 subnormals
	{"cvt.rn.ftz.f16.f32 %d, %a", "b16", b32s(1), []uint64{fb(0x1p-24)}, 0x0001},
	{"cvt.rn.ftz.f16.f32 %d, %a", "b16", b32s(1), []uint64{1}, 0x0000}, // the f32 input is subnormal
	c32("cvt.sat.f32.f16 %d, %a", one32, 0x4000),
	c32("cvt.sat.u8.s32 %d, %a", 0, s32(-5)),
	c32("cvt.sat.u8.s32 %d, %a", 255, 300),
	c32("cvt.sat.s8.s32 %d, %a", 0xFFFFFF80, s32(-300)),
	c32("cvt.s8.s32 %d, %a", 44, 300),
	c32("cvt.s8.s32 %d, %a", 0xFFFFFFC8, 200),
	c32("cvt.u8.s32 %d, %a", 0xC8, 200),
	c32("cvt.sat.u32.s32 %d, %a", 0, s32(-1)),
	c32("cvt.sat.s32.u32 %d, %a", 0x7FFFFFFF, 0xFFFFFFFF),
	{"cvt.s64.s32 %d, %a", "b64", b32s(1), []uint64{s32(-1)}, s64(-1)},
	{"cvt.u64.u32 %d, %a", "b64", b32s(1), []uint64{0xFFFFFFFF}, 0xFFFFFFFF},
	{"cvt.u32.u64 %d, %a", "b32", []string{"b64"}, []uint64{0x1FFFFFFFF}, 0xFFFFFFFF},
	// f64 with rounding modes.
	c64("add.rn.f64 %d, %a, %b", db(1), db(1), db(0x1p-53)),
	c64("add.rp.f64 %d, %a, %b", db(1+0x1p-52), db(1), db(0x1p-60)),
	c64("add.rz.f64 %d, %a, %b", db(1), db(1), db(0x1.8p-53)),
	c64("add.rm.f64 %d, %a, %b", db(-1-0x1p-52), db(-1), db(-0x1p-60)),
	c64("div.rn.f64 %d, %a, %b", 0x3FD5555555555555, db(1), db(3)),
	c64("div.rp.f64 %d, %a, %b", 0x3FD5555555555556, db(1), db(3)),
	c64("mul.rz.f64 %d, %a, %b", db(math.MaxFloat64), db(math.MaxFloat64), db(2)),
	c64("sqrt.rn.f64 %d, %a", db(math.Sqrt2), db(2)),
	c64("fma.rn.f64 %d, %a, %b, %c", db(math.FMA(1+0x1p-52, 1-0x1p-53, -1)), db(1+0x1p-52), db(1-0x1p-53), db(-1)),
	c64("min.f64 %d, %a, %b", db(1), db(math.NaN()), db(1)),
	c64("neg.f64 %d, %a", db(-2), db(2)),
	c64("rcp.rn.f64 %d, %a", db(0.25), db(4)),
	// f16, bf16 and their packed forms.
	{"add.f16 %d, %a, %b", "b16", []string{"b16", "b16"}, []uint64{0x3C00, 0x3C00}, 0x4000},
	{"mul.f16 %d, %a, %b", "b16", []string{"b16", "b16"}, []uint64{0x7BFF, 0x4000}, 0x7C00},
	{"sub.f16 %d, %a, %b", "b16", []string{"b16", "b16"}, []uint64{0x3C00, 0x3C01}, 0x9400}, // -2^-10
	{"fma.rn.f16 %d, %a, %b, %c", "b16", []string{"b16", "b16", "b16"}, []uint64{0x3C01, 0x3BFF, 0xBC00}, 0x0FFE},
	{"mul.ftz.f16 %d, %a, %b", "b16", []string{"b16", "b16"}, []uint64{0x0400, 0x3800}, 0},
	{"max.f16 %d, %a, %b", "b16", []string{"b16", "b16"}, []uint64{0x7E00, 0x3C00}, 0x3C00},
	{"neg.f16 %d, %a", "b16", []string{"b16"}, []uint64{0x3C00}, 0xBC00},
	c32("add.f16x2 %d, %a, %b", 0x40004200, 0x3C004000, 0x3C003C00),
	c32("mul.f16x2 %d, %a, %b", 0x44004400, 0x40004000, 0x40004000),
	c32("fma.rn.f16x2 %d, %a, %b, %c", 0x40004000, 0x3C003C00, 0x40003C00, 0x00003C00),
	c32("min.f16x2 %d, %a, %b", 0x3C00BC00, 0x4000BC00, 0x3C007E00),
	c32("max.f16x2 %d, %a, %b", 0x40003C00, 0x40003C00, 0x3C00BC00),
	c32("fma.rn.bf16x2 %d, %a, %b, %c", 0x40003F80, 0x3F803F80, 0x40003F80, 0x00000000),
	{"fma.rn.bf16 %d, %a, %b, %c", "b16", []string{"b16", "b16", "b16"}, []uint64{0x3F81, 0x3F81, 0}, 0x3F82},
	c32("max.bf16x2 %d, %a, %b", 0x3F804000, 0x3F804000, 0xBF803F80),
	// Funnel shifts, three-input logic, bit find.
	c32("shf.l.wrap.b32 %d, %a, %b, %c", 0x23456788, 0x80000000, 0x12345678, 4),
	c32("shf.r.wrap.b32 %d, %a, %b, %c", 0x81234567, 0x12345678, 0x00000008, 36),
	c32("shf.l.clamp.b32 %d, %a, %b, %c", 0x11111111, 0x11111111, 0x22222222, 40),
	c32("shf.r.clamp.b32 %d, %a, %b, %c", 0x22222222, 0x11111111, 0x22222222, 32),
	c32("lop3.b32 %d, %a, %b, %c, 0x96", 0x96, 0xF0, 0xCC, 0xAA), // a^b^c reproduces the table
	c32("lop3.b32 %d, %a, %b, %c, 0xE8", 0xE8, 0xF0, 0xCC, 0xAA), // majority
	c32("bfind.u32 %d, %a", 31, 0x80000000),
	c32("bfind.u32 %d, %a", 0xFFFFFFFF, 0),
	c32("bfind.s32 %d, %a", 30, 0x80000000), // the first bit that differs from the sign
	c32("bfind.shiftamt.u32 %d, %a", 27, 0x10),
	{"cvt.rn.f16x2.f32 %d, %a, %b", "b32", b32s(2), []uint64{one32, two32}, 0x3C004000},
	{"cvt.rn.bf16x2.f32 %d, %a, %b", "b32", b32s(2), []uint64{one32, 0x3F808000}, 0x3F803F80},
	c32("mul24.lo.u32 %d, %a, %b", 0xFE000001, 0xFFFFFF, 0xFFFFFF),  // the 48-bit product's low half
	c32("mul24.hi.u32 %d, %a, %b", 0xFFFFFE00, 0x1FFFFFF, 0xFFFFFF), // bits 47..16; bit 24 of a ignored
	c32("mul24.lo.s32 %d, %a, %b", s32(-6), 0xFFFFFE, 3),            // 24-bit -2 times 3
	c32("mad24.lo.u32 %d, %a, %b, %c", 7, 2, 3, 1),
	// prmt's special modes select with c[1:0] and never sign-extend.
	c32("prmt.b32.f4e %d, %a, %b, %c", 0x66554433, 0x33221100, 0x77665544, 3),
	c32("prmt.b32.b4e %d, %a, %b, %c", 0x66770011, 0x33221100, 0x77665544, 1),
	c32("prmt.b32.rc8 %d, %a, %b, %c", 0x80808080, 0x00800000, 0x77665544, 2),
	c32("prmt.b32.ecl %d, %a, %b, %c", 0x33221111, 0x33221100, 0x77665544, 1),
	c32("prmt.b32.ecr %d, %a, %b, %c", 0x22221100, 0x33221100, 0x77665544, 2),
	c32("prmt.b32.rc16 %d, %a, %b, %c", 0x33223322, 0x33221100, 0x77665544, 5),
	// .relu: negative results become +0, NaN results the canonical NaN.
	{"fma.rn.relu.f16 %d, %a, %b, %c", "b16", []string{"b16", "b16", "b16"}, []uint64{0x3C00, 0xC000, 0x3C00}, 0},
	{"fma.rn.relu.f16 %d, %a, %b, %c", "b16", []string{"b16", "b16", "b16"}, []uint64{0x3C00, 0x4000, 0x3C00}, 0x4200},
	{"fma.rn.relu.f16 %d, %a, %b, %c", "b16", []string{"b16", "b16", "b16"}, []uint64{0x7C00, 0, 0x3C00}, 0x7FFF},
	{"fma.rn.relu.bf16 %d, %a, %b, %c", "b16", []string{"b16", "b16", "b16"}, []uint64{0x3F80, 0xC000, 0x3F80}, 0},
	c32("fma.rn.relu.f16x2 %d, %a, %b, %c", 0x42000000, 0x3C003C00, 0x4000C000, 0x3C003C00),
	c32("fma.rn.relu.bf16x2 %d, %a, %b, %c", 0x00004040, 0x3F803F80, 0xC0004000, 0x3F803F80),
	{"cvt.rn.relu.f16.f32 %d, %a", "b16", b32s(1), []uint64{fb(-2)}, 0},
	{"cvt.rn.relu.bf16.f32 %d, %a", "b16", b32s(1), []uint64{qnan32}, 0x7FFF},
	{"cvt.rn.relu.f16x2.f32 %d, %a, %b", "b32", b32s(2), []uint64{fb(-1), two32}, 0x00004000},
	{"cvt.rn.relu.bf16x2.f32 %d, %a, %b", "b32", b32s(2), []uint64{one32, fb(-3)}, 0x3F800000},
	// Moves and packing.
	{"mov.b32 %d, {%a, %b}", "b32", []string{"b16", "b16"}, []uint64{0x1111, 0x2222}, 0x22221111},
	{"mov.b64 %d, {%a, %b}", "b64", b32s(2), []uint64{0x11111111, 0x22222222}, 0x2222222211111111},
}

// opCases90 need sm_90: bf16 add, sub and mul.
var opCases90 = []opCase{
	{"add.bf16 %d, %a, %b", "b16", []string{"b16", "b16"}, []uint64{0x3F80, 0x3F80}, 0x4000},
	{"add.rn.bf16 %d, %a, %b", "b16", []string{"b16", "b16"}, []uint64{0x3F80, 0x3B80}, 0x3F80}, // 1 + 2^-8: a tie, to even
	{"sub.bf16 %d, %a, %b", "b16", []string{"b16", "b16"}, []uint64{0x3F80, 0x3F81}, 0xBC00},    // -2^-7
	{"mul.bf16 %d, %a, %b", "b16", []string{"b16", "b16"}, []uint64{0x7F7F, 0x4000}, 0x7F80},    // overflow to inf
	{"mul.rn.bf16 %d, %a, %b", "b16", []string{"b16", "b16"}, []uint64{0x3FC0, 0x3FC0}, 0x4010}, // 1.5 * 1.5
	c32("add.bf16x2 %d, %a, %b", 0x40004040, 0x3F803F80, 0x3F804000),
	c32("mul.bf16x2 %d, %a, %b", 0xC0803F00, 0x40003F80, 0xC0003F00),
	c32("mul.rn.bf16x2 %d, %a, %b", 0x7FFF0000, 0x7F800000, 0x00000000), // inf*0 is NaN; 0*0 is 0
}

func TestInstructionTable(t *testing.T) {
	runOpTable(t, "sm_80", opCases, "sm_80", "sm_90")
}

func TestInstructionTableSM90(t *testing.T) {
	runOpTable(t, "sm_90", opCases90, "sm_90")
}

// runOpTable runs every case as its own kernel of one module for target and
// assembles the module with ptxas for archs.
func runOpTable(t *testing.T, target string, cases []opCase, archs ...string) {
	var b strings.Builder
	b.WriteString(".version 7.8\n.target " + target + "\n.address_size 64\n")
	for i, c := range cases {
		fmt.Fprintf(&b, ".visible .entry k%d(.param .u64 out, .param .b64 p0, .param .b64 p1, .param .b64 p2, .param .b64 p3)\n{\n", i)
		fmt.Fprintf(&b, "\t.reg .b64 %%rd<3>;\n\t.reg .%s %%d;\n", c.dt)
		names := []string{"%a", "%b", "%c", "%e"}
		for j, st := range c.st {
			fmt.Fprintf(&b, "\t.reg .%s %s;\n", st, names[j])
		}
		b.WriteString("\tld.param.u64 %rd1, [out];\n")
		for j, st := range c.st {
			fmt.Fprintf(&b, "\tld.param.b64 %%rd2, [p%d];\n", j)
			switch st {
			case "pred":
				fmt.Fprintf(&b, "\tsetp.ne.b64 %s, %%rd2, 0;\n", names[j])
			case "b64":
				fmt.Fprintf(&b, "\tmov.b64 %s, %%rd2;\n", names[j])
			case "b32":
				fmt.Fprintf(&b, "\tcvt.u32.u64 %s, %%rd2;\n", names[j])
			case "b16":
				fmt.Fprintf(&b, "\tcvt.u16.u64 %s, %%rd2;\n", names[j])
			}
		}
		fmt.Fprintf(&b, "\t%s;\n", c.inst)
		switch c.dt {
		case "pred":
			b.WriteString("\tselp.u64 %rd2, 1, 0, %d;\n")
		case "b64":
			b.WriteString("\tmov.b64 %rd2, %d;\n")
		case "b32":
			b.WriteString("\tcvt.u64.u32 %rd2, %d;\n")
		case "b16":
			b.WriteString("\tcvt.u64.u16 %rd2, %d;\n")
		}
		b.WriteString("\tst.global.b64 [%rd1], %rd2;\n\tret;\n}\n")
	}
	src := b.String()
	dev := NewDevice()
	m := load(t, dev, src)
	out, _ := dev.Alloc(8)
	for i, c := range cases {
		args := []any{out}
		for j := 0; j < 4; j++ {
			var v uint64
			if j < len(c.src) {
				v = c.src[j]
			}
			args = append(args, v)
		}
		if _, err := m.Launch(fmt.Sprintf("k%d", i), grid(1, 1), args...); err != nil {
			t.Errorf("%s: %v", c.inst, err)
			continue
		}
		got := bytesU64(download(t, dev, out, 8))
		if got != c.want {
			t.Errorf("%s with %#x: got %#x, want %#x", c.inst, c.src, got, c.want)
		}
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src, archs...) })
}

func bytesU64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// assembles checks that NVIDIA's assembler accepts a test kernel, so the
// simulator is never tested on PTX a GPU would reject: for sm_80 and sm_90,
// or for the archs given.
func assembles(t *testing.T, src string, archs ...string) {
	t.Helper()
	ptxas.Require(t)
	if len(archs) == 0 {
		archs = []string{"sm_80", "sm_90"}
	}
	for _, arch := range archs {
		if _, err := ptxas.Assemble([]byte(src), arch); err != nil {
			t.Fatalf("ptxas -arch=%s rejects the test PTX: %v", arch, err)
		}
	}
}
