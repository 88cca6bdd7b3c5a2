package sim

import (
	"testing"
)

// Each checker must catch a planted bug and stay quiet on the corrected kernel.

const oobKernel = `
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .f32 %f<2>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [k_param_0];
	ld.param.u32 %r1, [k_param_1];
	mov.u32 %r2, %tid.x;
	setp.gt.u32 %p1, %r2, %r1;    // planted bug: > instead of >=
	@%p1 bra DONE;
	mul.wide.u32 %rd2, %r2, 4;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.f32 %f1, [%rd3];
	add.f32 %f1, %f1, 0f3F800000;
	st.global.f32 [%rd3], %f1;
DONE:
	ret;`

func TestMemcheckOutOfBounds(t *testing.T) {
	src := kernel(".param .u64 k_param_0, .param .u32 k_param_1", oobKernel)
	dev := NewDevice()
	m := load(t, dev, src)
	buf := upload(t, dev, make([]byte, 4*16))
	_, err := m.Launch("k", grid(1, 32), buf, uint32(16))
	mustErr(t, err, "memcheck", "out-of-bounds global load of 4 bytes", "0 bytes past the end of allocation", "kernel k", "line 18", "thread (16,0,0)", "block (0,0,0)")
	// The fixed bound raises nothing.
	fixed := kernel(".param .u64 k_param_0, .param .u32 k_param_1", replace(oobKernel, "setp.gt.u32", "setp.ge.u32"))
	m = load(t, dev, fixed)
	if _, err := m.Launch("k", grid(1, 32), buf, uint32(16)); err != nil {
		t.Fatal(err)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

func TestMemcheckFreedAndMisaligned(t *testing.T) {
	src := kernel(".param .u64 p, .param .u64 off", `
	.reg .b64 %rd<4>;
	.reg .b32 %r1;
	ld.param.u64 %rd1, [p];
	ld.param.u64 %rd2, [off];
	add.s64 %rd3, %rd1, %rd2;
	ld.global.u32 %r1, [%rd3];`)
	dev := NewDevice()
	m := load(t, dev, src)
	buf := upload(t, dev, make([]byte, 64))
	_, err := m.Launch("k", grid(1, 1), buf, uint64(2))
	mustErr(t, err, "memcheck", "misaligned global load of 4 bytes")
	if _, err := m.Launch("k", grid(1, 1), buf, uint64(60)); err != nil {
		t.Fatal(err)
	}
	if err := dev.Free(buf); err != nil {
		t.Fatal(err)
	}
	_, err = m.Launch("k", grid(1, 1), buf, uint64(0))
	mustErr(t, err, "memcheck", "out-of-bounds")
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

func TestMemcheckUninitialized(t *testing.T) {
	src := kernel(".param .u64 p, .param .u64 q", `
	.reg .b64 %rd<5>;
	.reg .b32 %r<3>;
	ld.param.u64 %rd1, [p];
	ld.param.u64 %rd2, [q];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.u32 %r2, [%rd4];
	add.s64 %rd4, %rd2, %rd3;
	st.global.u32 [%rd4], %r2;`)
	dev := NewDevice()
	m := load(t, dev, src)
	in, _ := dev.Alloc(4 * 32)
	out, _ := dev.Alloc(4 * 32)
	// Only the first 31 elements were written by the host.
	if err := dev.Write(in, make([]byte, 4*31)); err != nil {
		t.Fatal(err)
	}
	_, err := m.Launch("k", grid(1, 32), in, out)
	mustErr(t, err, "memcheck", "uninitialized global load", "124 bytes into allocation", "thread (31,0,0)")
	if err := dev.Write(in, make([]byte, 4*32)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Launch("k", grid(1, 32), in, out); err != nil {
		t.Fatal(err)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

// reverseKernel reverses 64 floats through shared memory; the barrier is
// what the racecheck test removes.
const reverseKernel = `
	.shared .align 4 .b8 buf[256];
	.reg .b64 %rd<5>;
	.reg .b32 %r<6>;
	.reg .f32 %f1;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.f32 %f1, [%rd3];
	shl.b32 %r2, %r1, 2;
	mov.u32 %r3, buf;
	add.s32 %r4, %r3, %r2;
	st.shared.u32 [%r4], 0;       // every slot is written once before the race
	bar.sync 0;
	st.shared.f32 [%r4], %f1;
	BARRIER
	sub.s32 %r5, 252, %r2;
	add.s32 %r5, %r3, %r5;
	ld.shared.f32 %f1, [%r5];
	st.global.f32 [%rd3], %f1;`

func TestRacecheck(t *testing.T) {
	good := kernel(".param .u64 p", replace(reverseKernel, "BARRIER", "bar.sync 0;"))
	bad := kernel(".param .u64 p", replace(reverseKernel, "BARRIER", ""))
	dev := NewDevice()
	data := make([]float32, 64)
	for i := range data {
		data[i] = float32(i)
	}
	buf := upload(t, dev, f32sBytes(data))
	_, err := load(t, dev, bad).Launch("k", grid(1, 64), buf)
	mustErr(t, err, "racecheck", "line 21", "thread (0,0,0)",
		"shared-memory race: this thread writes byte 0x0, read by thread (63,0,0) at line 25 with no barrier in between")
	buf = upload(t, dev, f32sBytes(data))
	st, err := load(t, dev, good).Launch("k", grid(1, 64), buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesF32s(download(t, dev, buf, 256)) {
		if v != float32(63-i) {
			t.Fatalf("out[%d] = %v", i, v)
		}
	}
	if st.Barriers != 2 || st.SharedBankConflicts != 0 || st.SharedWavefronts != 6 {
		t.Errorf("stats: barriers %d, conflicts %d, wavefronts %d", st.Barriers, st.SharedBankConflicts, st.SharedWavefronts)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, good); assembles(t, bad) })
}

func TestPartialBarrier(t *testing.T) {
	body := `
	.reg .pred %p1;
	.reg .b32 %r1;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, LIMIT;
	@!%p1 bra SKIP;
	bar.sync 0;
SKIP:
	ret;`
	bad := kernel("", replace(body, "LIMIT", "48"))
	good := kernel("", replace(body, "LIMIT", "64"))
	dev := NewDevice()
	_, err := load(t, dev, bad).Launch("k", grid(1, 64), []any{}...)
	mustErr(t, err, "synccheck", "barrier 0 reached by only 48 of 64 threads", "thread (48,0,0)", "exited without reaching it", "line 12")
	if _, err := load(t, dev, good).Launch("k", grid(1, 64)); err != nil {
		t.Fatal(err)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, bad) })
}

func TestDivergedCollective(t *testing.T) {
	// The two halves of the warp reach different shfl.sync instructions,
	// each naming the whole warp: they wait for each other forever.
	body := `
	.reg .pred %p1;
	.reg .b32 %r<3>;
	mov.u32 %r1, %laneid;
	setp.lt.u32 %p1, %r1, LIMIT;
	@!%p1 bra ELSE;
	shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;
	bra.uni DONE;
ELSE:
	shfl.sync.bfly.b32 %r2, %r1, 2, 31, -1;
DONE:
	ret;`
	bad := kernel("", replace(body, "LIMIT", "16"))
	good := kernel("", replace(body, "LIMIT", "32"))
	dev := NewDevice()
	_, err := load(t, dev, bad).Launch("k", grid(1, 32))
	mustErr(t, err, "synccheck", "shfl.sync.bfly.b32 executed by a diverged warp", "lanes 0x0000ffff wait for lanes 0xffff0000", "line 12", "thread (16,0,0)")
	if _, err := load(t, dev, good).Launch("k", grid(1, 32)); err != nil {
		t.Fatal(err)
	}
	// Lanes that exit are not waited for: a shfl among the remaining lanes is fine.
	early := kernel("", replace(replace(body, "LIMIT", "16"), "ELSE:\n\tshfl.sync.bfly.b32 %r2, %r1, 2, 31, -1;", "ELSE:"))
	if _, err := load(t, dev, early).Launch("k", grid(1, 32)); err != nil {
		t.Fatal(err)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, bad) })
}

// TestBarrierDivergedWarp: one warp's lanes reach barrier 0 through two
// different bar.sync instructions (if/else, each with __syncthreads).
func TestBarrierDivergedWarp(t *testing.T) {
	src := kernel("", `
	.reg .pred %p1;
	.reg .b32 %r<3>;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 16;
	@!%p1 bra ELSE;
	bar.sync 0;
	bra.uni DONE;
ELSE:
	bar.sync 0;
DONE:
	ret;`)
	_, err := load(t, NewDevice(), src).Launch("k", grid(1, 64))
	mustErr(t, err, "synccheck", "bar.sync executed by a diverged warp", "through line 12")
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

func replace(s, old, new string) string {
	out := ""
	for {
		i := indexOf(s, old)
		if i < 0 {
			return out + s
		}
		out += s[:i] + new
		s = s[i+len(old):]
	}
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestMemcheckUninitializedLocal(t *testing.T) {
	body := `
	.local .align 4 .b8 depot[16];
	.reg .b32 %r<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	st.local.u32 [depot], %r1;
	ld.local.u32 %r2, [depot+OFF];
	st.global.u32 [%rd1], %r2;`
	bad := kernel(".param .u64 p", replace(body, "OFF", "4"))
	good := kernel(".param .u64 p", replace(body, "OFF", "0"))
	dev := NewDevice()
	out, _ := dev.Alloc(4)
	_, err := load(t, dev, bad).Launch("k", grid(1, 1), out)
	mustErr(t, err, "memcheck", "uninitialized local load: local byte 0x4 was never written", "line 13")
	if _, err := load(t, dev, good).Launch("k", grid(1, 1), out); err != nil {
		t.Fatal(err)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, bad) })
}

// namedBarrierKernel: warps 0 and 1 meet at named barrier 3; warp 2 writes
// s[lane] and warp 3 reads it (WRITER and READER add their synchronization).
// Warps 0, 1 and 3 first spin for more than one scheduling turn, so warp 2
// writes before barrier 3 completes and warp 3 reads after: a checker that
// let any barrier order all warps would miss the race.
const namedBarrierKernel = `
	.shared .align 4 .b32 s[32];
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	mov.u32 %r1, %tid.x;
	shr.u32 %r2, %r1, 5;
	and.b32 %r3, %r1, 31;
	shl.b32 %r4, %r3, 2;
	mov.u32 %r5, s;
	add.s32 %r5, %r5, %r4;
	setp.eq.u32 %p1, %r2, 2;
	@%p1 bra WRITE;
	mov.u32 %r6, 0;
SPIN:
	add.s32 %r6, %r6, 1;
	setp.lt.u32 %p2, %r6, 2000;
	@%p2 bra SPIN;
	setp.eq.u32 %p1, %r2, 3;
	@%p1 bra READ;
	bar.sync 3, 64;
	ret;
WRITE:
	WRITER
	ret;
READ:
	READER
	ld.param.u64 %rd1, [p];
	mul.wide.u32 %rd2, %r3, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r7;
	ret;`

// TestRacecheckNamedBarriers: a barrier orders only the warps that took part
// in it, and bar.arrive orders the arriving warp's earlier accesses only.
func TestRacecheckNamedBarriers(t *testing.T) {
	for _, c := range []struct {
		name, writer, reader string
		race                 bool
	}{
		{"other warps' barrier", "st.shared.u32 [%r5], %r1;", "ld.shared.u32 %r7, [%r5];", true},
		{"shared barrier", "st.shared.u32 [%r5], %r1;\n\tbar.sync 4, 64;", "bar.sync 4, 64;\n\tld.shared.u32 %r7, [%r5];", false},
		{"arrive then write", "bar.arrive 4, 64;\n\tst.shared.u32 [%r5], %r1;", "bar.sync 4, 64;\n\tld.shared.u32 %r7, [%r5];", true},
		{"write then arrive", "st.shared.u32 [%r5], %r1;\n\tbar.arrive 4, 64;", "bar.sync 4, 64;\n\tld.shared.u32 %r7, [%r5];", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := kernel(".param .u64 p", replace(replace(namedBarrierKernel, "WRITER", c.writer), "READER", c.reader))
			dev := NewDevice()
			out, _ := dev.Alloc(4 * 32)
			_, err := load(t, dev, src).Launch("k", grid(1, 128), out)
			if c.race {
				mustErr(t, err, "racecheck", "thread (96,0,0)", "this thread reads byte 0x0, written by thread (64,0,0)")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range bytesU32s(download(t, dev, out, 4*32)) {
				if v != uint32(64+i) {
					t.Fatalf("out[%d] = %d, want %d", i, v, 64+i)
				}
			}
			t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
		})
	}
}

// An atomic reads the old value, so memcheck reports one on memory never
// written, as it does a load; once written, the atomic is fine.
func TestMemcheckUninitializedAtomic(t *testing.T) {
	for _, op := range []string{"atom.global.add.u32 %r2, [%rd1], 1;", "red.global.add.u32 [%rd1], 1;"} {
		src := kernel(".param .u64 p", `
	.reg .b64 %rd<2>;
	.reg .b32 %r<3>;
	ld.param.u64 %rd1, [p];
	`+op)
		dev := NewDevice()
		m := load(t, dev, src)
		p, _ := dev.Alloc(4)
		_, err := m.Launch("k", grid(1, 1), p)
		mustErr(t, err, "memcheck", "uninitialized global atomic", "was never written")
		if err := dev.Write(p, make([]byte, 4)); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Launch("k", grid(1, 1), p); err != nil {
			t.Fatal(err)
		}
	}
}
