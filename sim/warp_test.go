package sim

import (
	"fmt"
	"strings"
	"testing"
)

type shflCase struct {
	mode  string
	b     int
	width int
}

// shflRef is CUDA's documented meaning of __shfl*_sync(mask, v, b, width),
// which compiles to shfl.sync with c = (32-width)<<8 | (up ? 0 : 31).
func shflRef(c shflCase, lane int) (src int, ok bool) {
	w := c.width
	base := lane / w * w
	switch c.mode {
	case "up":
		if lane-base >= c.b {
			return lane - c.b, true
		}
	case "down":
		if lane-base+c.b < w {
			return lane + c.b, true
		}
	case "bfly":
		if j := lane ^ c.b; j/w == lane/w {
			return j, true
		}
	case "idx":
		return base + c.b%w, true
	}
	return lane, false
}

func TestShfl(t *testing.T) {
	var cases []shflCase
	for _, mode := range []string{"up", "down", "bfly", "idx"} {
		for _, w := range []int{32, 16, 8, 4} {
			for _, b := range []int{0, 1, 3, 7, 16, 31} {
				if mode == "bfly" && b >= w {
					continue
				}
				cases = append(cases, shflCase{mode, b, w})
			}
		}
	}
	var body strings.Builder
	body.WriteString(`
	.reg .pred %p1;
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %laneid;
	mad.lo.u32 %r2, %r1, 10, 1;
`)
	for i, c := range cases {
		cval := (32-c.width)<<8 | 31
		if c.mode == "up" {
			cval = (32 - c.width) << 8
		}
		fmt.Fprintf(&body, "\tshfl.sync.%s.b32 %%r3|%%p1, %%r2, %d, %d, -1;\n", c.mode, c.b, cval)
		fmt.Fprintf(&body, "\tselp.b32 %%r3, %%r3, -1, %%p1;\n")
		fmt.Fprintf(&body, "\tmad.lo.u32 %%r0, %%r1, %d, %d;\n\tmul.wide.u32 %%rd2, %%r0, 4;\n\tadd.s64 %%rd3, %%rd1, %%rd2;\n\tst.global.u32 [%%rd3], %%r3;\n", len(cases), i)
	}
	src := kernel(".param .u64 out", strings.Replace(body.String(), ".reg .b32 %r<4>", ".reg .b32 %r<4>", 1))
	dev := NewDevice()
	m := load(t, dev, src)
	out, _ := dev.Alloc(4 * 32 * len(cases))
	if _, err := m.Launch("k", grid(1, 32), out); err != nil {
		t.Fatal(err)
	}
	got := bytesU32s(download(t, dev, out, 4*32*len(cases)))
	for lane := 0; lane < 32; lane++ {
		for i, c := range cases {
			j, ok := shflRef(c, lane)
			want := uint32(0xFFFFFFFF)
			if ok {
				want = uint32(j*10 + 1)
			}
			if g := got[lane*len(cases)+i]; g != want {
				t.Errorf("shfl.%s b=%d width=%d lane %d: got %d, want %d", c.mode, c.b, c.width, lane, int32(g), int32(want))
			}
		}
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

func TestVoteMatchActivemask(t *testing.T) {
	src := kernel(".param .u64 out", `
	.reg .pred %p<3>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %laneid;
	rem.u32 %r2, %r1, 3;
	setp.eq.u32 %p1, %r2, 0;
	vote.sync.ballot.b32 %r3, %p1, -1;
	vote.sync.any.pred %p2, %p1, -1;
	selp.u32 %r4, 1, 0, %p2;
	vote.sync.all.pred %p2, %p1, -1;
	selp.u32 %r5, 1, 0, %p2;
	vote.sync.uni.pred %p2, %p1, -1;
	selp.u32 %r6, 1, 0, %p2;
	vote.sync.all.pred %p2, !%p1, -1;
	selp.u32 %r11, 1, 0, %p2;
	and.b32 %r7, %r1, 3;
	match.any.sync.b32 %r8, %r7, -1;
	match.all.sync.b32 %r9|%p2, %r7, -1;
	mov.u32 %r10, 0;
	setp.lt.u32 %p1, %r1, 10;
	@!%p1 bra SKIP;
	activemask.b32 %r10;
SKIP:
	mul.wide.u32 %rd2, %r1, 32;
	add.s64 %rd3, %rd1, %rd2;
	st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r6};
	st.global.v4.u32 [%rd3+16], {%r8, %r9, %r10, %r11};`)
	dev := NewDevice()
	m := load(t, dev, src)
	out, _ := dev.Alloc(32 * 32)
	if _, err := m.Launch("k", grid(1, 32), out); err != nil {
		t.Fatal(err)
	}
	got := bytesU32s(download(t, dev, out, 32*32))
	var ballot uint32
	for l := 0; l < 32; l += 3 {
		ballot |= 1 << l
	}
	for l := 0; l < 32; l++ {
		r := got[8*l : 8*l+8]
		matchAny := uint32(0x11111111) << (l & 3)
		var matchAll, active uint32 // the lanes hold different values: match.all gives 0
		if l < 10 {
			active = 0x3FF
		}
		want := []uint32{ballot, 1, 0, 0, matchAny, matchAll, active, 0} // lane 0 votes false with !p
		for k := range want {
			if r[k] != want[k] {
				t.Errorf("lane %d result %d: got %#x, want %#x", l, k, r[k], want[k])
			}
		}
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

// TestAtomicsContention has every thread of many blocks hit the same
// addresses, including a compare-and-swap loop in which the lanes of one
// warp compete.
func TestAtomicsContention(t *testing.T) {
	src := kernel(".param .u64 p", `
	.shared .align 4 .u32 scount;
	.reg .pred %p<3>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 st.shared.u32 [scount], 0;
	bar.sync 0;
	atom.global.add.u32 %r2, [%rd1], 1;
	atom.shared.add.u32 %r3, [scount], 1;
	atom.global.inc.u32 %r4, [%rd1+4], 6;
	atom.global.max.s32 %r5, [%rd1+8], %r1;
	atom.global.min.u32 %r5, [%rd1+12], %r1;
	atom.global.or.b32 %r5, [%rd1+16], %r1;
	atom.global.add.f32 %r5, [%rd1+20], 0f3F000000;
	red.global.add.u64 [%rd1+24], 3;
	atom.global.dec.u32 %r5, [%rd1+32], 1000;
	// CAS loop: x = x*3 + 1 mod 2^32, once per thread.
LOOP:
	ld.volatile.global.u32 %r6, [%rd1+36];
	mad.lo.u32 %r7, %r6, 3, 1;
	atom.global.cas.b32 %r8, [%rd1+36], %r6, %r7;
	setp.ne.u32 %p2, %r8, %r6;
	@%p2 bra LOOP;
	bar.sync 0;
	@!%p1 bra DONE;
	ld.shared.u32 %r9, [scount];
	atom.global.add.u32 %r10, [%rd1+40], %r9;
DONE:
	ret;`)
	dev := NewDevice()
	m := load(t, dev, src)
	init := make([]uint32, 11)
	init[2] = 0x80000000 // max over tids, signed
	init[3] = 0xFFFFFFFF
	init[8] = 0
	p := upload(t, dev, u32sBytes(init))
	const blocks, threads = 7, 96
	if _, err := m.Launch("k", grid(blocks, threads), p); err != nil {
		t.Fatal(err)
	}
	got := bytesU32s(download(t, dev, p, 44))
	n := uint32(blocks * threads)
	x := uint32(0)
	for i := uint32(0); i < n; i++ {
		x = x*3 + 1
	}
	dec := uint32(0)
	for i := uint32(0); i < n; i++ {
		if dec == 0 || dec > 1000 {
			dec = 1000
		} else {
			dec--
		}
	}
	want := []uint32{n, n % 7, threads - 1, 0, 127, fb32(float32(n) / 2), 3 * n, 0, dec, x, n}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("word %d: got %#x, want %#x", i, got[i], want[i])
		}
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

func fb32(f float32) uint32 { return uint32(fb(f)) }

// TestBarrierDivergentPaths has two warps reach barrier 0 through different
// bar.sync instructions, and a barrier inside a loop whose trip count is
// uniform per block.
func TestBarrierDivergentPaths(t *testing.T) {
	src := kernel(".param .u64 p", `
	.shared .align 4 .b8 s[256];
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 2;
	mov.u32 %r7, s;
	add.u32 %r2, %r2, %r7;
	setp.lt.u32 %p1, %r1, 32;
	@!%p1 bra CONSUMER;
	mov.u32 %r3, 0;
PRODUCE:
	mad.lo.u32 %r4, %r1, 100, %r3;
	st.shared.u32 [%r2], %r4;
	bar.sync 0;
	bar.sync 1, 64;
	add.u32 %r3, %r3, 1;
	setp.lt.u32 %p2, %r3, 3;
	@%p2 bra PRODUCE;
	bra.uni DONE;
CONSUMER:
	mov.u32 %r3, 0;
	mov.u32 %r6, 0;
CONSUME:
	bar.sync 0;
	sub.u32 %r5, %r2, 128;
	ld.shared.u32 %r4, [%r5];
	add.u32 %r6, %r6, %r4;
	bar.sync 1, 64;
	add.u32 %r3, %r3, 1;
	setp.lt.u32 %p2, %r3, 3;
	@%p2 bra CONSUME;
	sub.u32 %r5, %r1, 32;
	mov.u32 %r7, %ctaid.x;
	mad.lo.u32 %r5, %r7, 32, %r5;
	mul.wide.u32 %rd2, %r5, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r6;
DONE:
	ret;`)
	dev := NewDevice()
	m := load(t, dev, src)
	// Each block writes its own 32 results: blocks run in parallel, and a
	// kernel whose blocks store to the same words races (regression: CI).
	out, _ := dev.Alloc(4 * 64)
	st, err := m.Launch("k", grid(2, 64), out)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesU32s(download(t, dev, out, 256)) {
		if want := uint32(3*100*(i%32) + 0 + 1 + 2); v != want {
			t.Errorf("out[%d] = %d, want %d", i, v, want)
		}
	}
	if st.Barriers != 2*6 {
		t.Errorf("barriers = %d, want 12", st.Barriers)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

func TestReduxAndCarry(t *testing.T) {
	src := kernel(".param .u64 out", `
	.reg .b32 %r<14>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %laneid;
	mad.lo.s32 %r2, %r1, 3, -40;
	redux.sync.add.s32 %r3, %r2, -1;
	redux.sync.min.s32 %r4, %r2, -1;
	redux.sync.max.u32 %r5, %r2, -1;
	redux.sync.or.b32 %r6, %r1, -1;
	redux.sync.xor.b32 %r7, %r1, -1;
	// 64-bit add from 32-bit halves: 0x00000001_FFFFFFFF + 0x00000000_00000001 + lane
	add.cc.u32 %r8, -1, 1;
	addc.u32 %r9, 1, %r1;
	sub.cc.u32 %r10, 0, 1;
	subc.u32 %r11, 5, 0;
	// 64x64->128 style partial products: lo(0xFFFFFFFF*2) + 3 carries into madc.hi.
	mad.lo.cc.u32 %r12, -1, 2, 3;
	madc.hi.u32 %r13, -1, 2, 0;
	st.global.v2.u32 [%rd1+1536], {%r12, %r13};
	mul.wide.u32 %rd2, %r1, 48;
	add.s64 %rd3, %rd1, %rd2;
	st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r6};
	st.global.v4.u32 [%rd3+16], {%r7, %r8, %r9, %r10};
	st.global.v2.u32 [%rd3+32], {%r11, %r11};`)
	dev := NewDevice()
	out, _ := dev.Alloc(48*32 + 8)
	if _, err := load(t, dev, src).Launch("k", grid(1, 32), out); err != nil {
		t.Fatal(err)
	}
	got := bytesU32s(download(t, dev, out, 48*32+8))
	// 0xFFFFFFFF*2 = 0x1_FFFFFFFE; + 3 = 0x2_00000001: low word 1, carry into the high word 1+1.
	if got[384] != 1 || got[385] != 2 {
		t.Errorf("mad.lo.cc/madc.hi: %#x %#x, want 1 2", got[384], got[385])
	}
	var sum int32
	var maxu uint32
	for l := 0; l < 32; l++ {
		v := int32(3*l - 40)
		sum += v
		maxu = max(maxu, uint32(v))
	}
	for l := 0; l < 32; l++ {
		r := got[12*l : 12*l+9]
		want := []uint32{uint32(sum), uint32(0xFFFFFFD8), maxu, 31, 0, 0, uint32(2 + l), 0xFFFFFFFF, 4}
		for k := range want {
			if r[k] != want[k] {
				t.Errorf("lane %d result %d: got %#x, want %#x", l, k, r[k], want[k])
			}
		}
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

// TestBarWarpSync: bar.warp.sync (__syncwarp) is a rendezvous of its
// membermask's lanes, which since sm_70 may wait at different instructions;
// lanes of the mask that never arrive, and lanes outside it, are errors.
func TestBarWarpSync(t *testing.T) {
	const body = `
	.shared .align 4 .b32 s[32];
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %laneid;
	shl.b32 %r2, %r1, 2;
	mov.u32 %r3, s;
	add.s32 %r4, %r3, %r2;
	st.shared.u32 [%r4], %r1;
	setp.lt.u32 %p1, %r1, 16;
	@!%p1 bra ELSE;
	THEN
	bra.uni JOIN;
ELSE:
	ELSE_
JOIN:
	xor.b32 %r5, %r2, 4;
	add.s32 %r5, %r3, %r5;
	ld.shared.u32 %r6, [%r5];
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r6;`
	for _, c := range []struct {
		then, els string
		err       []string // synccheck message parts; nil: runs
	}{
		{"bar.warp.sync 0xFFFF;", "bar.warp.sync 0xFFFF0000;", nil},
		{"bar.warp.sync -1;", "bar.warp.sync -1;", nil},
		{"bar.warp.sync -1;", "shfl.sync.idx.b32 %r7, %r1, 0, 31, -1;", []string{"executed by a diverged warp", "which never arrive"}},
		{"bar.warp.sync 0xFFFF;", "bar.warp.sync 0xFFFF;", []string{"bar.warp.sync executed by a lane not in membermask 0x0000ffff", "thread (16,0,0)"}},
	} {
		t.Run(c.then+" "+c.els, func(t *testing.T) {
			src := kernel(".param .u64 p", replace(replace(body, "THEN", c.then), "ELSE_", c.els))
			dev := NewDevice()
			out, _ := dev.Alloc(4 * 32)
			_, err := load(t, dev, src).Launch("k", grid(1, 32), out)
			if c.err != nil {
				mustErr(t, err, "synccheck", c.err...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range bytesU32s(download(t, dev, out, 4*32)) {
				if v != uint32(i^1) {
					t.Fatalf("out[%d] = %d, want %d", i, v, i^1)
				}
			}
			assembles(t, src)
		})
	}
}
