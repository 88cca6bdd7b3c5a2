package sim

import (
	"bytes"
	"fmt"
	"testing"
)

// TestBankConflicts plants strided shared-memory accesses: stride s words
// makes gcd(s,32) lanes share a bank.
func TestBankConflicts(t *testing.T) {
	for _, c := range []struct {
		stride, size int
		wavefronts   int64
	}{
		{1, 4, 1}, {2, 4, 2}, {4, 4, 4}, {32, 4, 32}, {33, 4, 1},
		{0, 4, 1},  // broadcast: every lane reads the same word
		{2, 8, 2},  // 8-byte accesses: two half-warp phases, each conflict-free
		{4, 16, 4}, // 16-byte accesses: four quarter-warp phases
		{4, 8, 4},  // 8-byte accesses two words apart: each phase has 2-way conflicts
	} {
		t.Run(fmt.Sprintf("stride%d_size%d", c.stride, c.size), func(t *testing.T) {
			ty := map[int]string{4: "u32", 8: "u64", 16: "v4.u32"}[c.size]
			reg := map[int]string{4: "%r5", 8: "%rd5", 16: "{%r5, %r6, %r7, %r8}"}[c.size]
			src := kernel("", fmt.Sprintf(`
	.shared .align 16 .b8 s[16384];
	.reg .b32 %%r<9>;
	.reg .b64 %%rd<6>;
	mov.u32 %%r1, %%tid.x;
	mul.lo.u32 %%r2, %%r1, %d;
	mov.u32 %%r3, s;
	add.u32 %%r4, %%r3, %%r2;
	ld.shared.%s %s, [%%r4];`, 4*c.stride, ty, reg))
			cfg := grid(1, 32)
			cfg.NoCheck = true // the memory is never written; only the counters matter here
			st, err := load(t, NewDevice(), src).Launch("k", cfg)
			if err != nil {
				t.Fatal(err)
			}
			if st.SharedWavefronts != c.wavefronts {
				t.Errorf("wavefronts = %d, want %d", st.SharedWavefronts, c.wavefronts)
			}
			if st.SharedBankConflicts != st.SharedWavefronts-phasesFor(c.size) {
				t.Errorf("conflicts = %d with %d wavefronts", st.SharedBankConflicts, st.SharedWavefronts)
			}
			assembles(t, src)
		})
	}
}

func phasesFor(size int) int64 { return int64(max(1, size*32/128)) }

// TestLocalAndGenericAddressing runs the code LLVM emits for a local array
// (a __local_depot addressed through cvta.local) and generic pointers into
// shared and global memory.
func TestLocalAndGenericAddressing(t *testing.T) {
	src := kernel(".param .u64 out", `
	.local .align 4 .b8 __local_depot0[32];
	.shared .align 4 .b8 sh[128];
	.reg .pred %p<3>;
	.reg .b32 %r<10>;
	.reg .b64 %SP;
	.reg .b64 %SPL;
	.reg .b64 %rd<10>;
	mov.u64 %SPL, __local_depot0;
	cvta.local.u64 %SP, %SPL;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	// local[i] = tid*10 + i through generic addresses
	mov.u32 %r2, 0;
L1:
	mad.lo.u32 %r3, %r1, 10, %r2;
	mul.wide.u32 %rd2, %r2, 4;
	add.s64 %rd3, %SP, %rd2;
	st.u32 [%rd3], %r3;
	add.u32 %r2, %r2, 1;
	setp.lt.u32 %p1, %r2, 8;
	@%p1 bra L1;
	// shared[tid] = local[7] via a generic shared pointer
	ld.local.u32 %r4, [%SPL+28];
	mov.u64 %rd4, sh;
	cvta.shared.u64 %rd5, %rd4;
	mul.wide.u32 %rd6, %r1, 4;
	add.s64 %rd7, %rd5, %rd6;
	st.u32 [%rd7], %r4;
	isspacep.shared %p2, %rd7;
	selp.u32 %r5, 1, 0, %p2;
	isspacep.global %p2, %rd1;
	selp.u32 %r6, 2, 0, %p2;
	add.u32 %r5, %r5, %r6;
	cvta.to.shared.u64 %rd8, %rd7;
	ld.shared.u32 %r7, [%rd8];
	// out[tid] = {shared value, space flags} through a generic global pointer
	mul.wide.u32 %rd9, %r1, 8;
	add.s64 %rd9, %rd1, %rd9;
	st.v2.u32 [%rd9], {%r7, %r5};`)
	dev := NewDevice()
	out, _ := dev.Alloc(8 * 32)
	st, err := load(t, dev, src).Launch("k", grid(1, 32), out)
	if err != nil {
		t.Fatal(err)
	}
	got := bytesU32s(download(t, dev, out, 8*32))
	for i := 0; i < 32; i++ {
		if got[2*i] != uint32(10*i+7) || got[2*i+1] != 3 {
			t.Errorf("thread %d: %d %d", i, got[2*i], got[2*i+1])
		}
	}
	if st.Class("st.local") == 0 || st.Class("ld.local") == 0 || st.Class("st.shared") == 0 {
		t.Errorf("generic accesses not classified by space: %v", st)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

func TestBarRedAndArrive(t *testing.T) {
	src := kernel(".param .u64 out", `
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 1;
	setp.eq.u32 %p1, %r2, 1;
	bar.red.popc.u32 %r3, 0, %p1;
	setp.lt.u32 %p2, %r1, 1000;
	bar.red.and.pred %p3, 0, %p2;
	selp.u32 %r4, 1, 0, %p3;
	bar.red.or.pred %p3, 0, !%p2;
	selp.u32 %r5, 1, 0, %p3;
	// Warps 0-1 produce, warps 2-3 consume through named barrier 1.
	setp.lt.u32 %p1, %r1, 64;
	@%p1 bar.arrive 1, 128;
	@!%p1 bar.sync 1, 128;
	mul.wide.u32 %rd2, %r1, 16;
	add.s64 %rd3, %rd1, %rd2;
	st.global.v4.u32 [%rd3], {%r3, %r4, %r5, %r1};`)
	dev := NewDevice()
	out, _ := dev.Alloc(16 * 128)
	if _, err := load(t, dev, src).Launch("k", grid(1, 128), out); err != nil {
		t.Fatal(err)
	}
	got := bytesU32s(download(t, dev, out, 16*128))
	for i := 0; i < 128; i++ {
		if r := got[4*i : 4*i+3]; r[0] != 64 || r[1] != 1 || r[2] != 0 {
			t.Fatalf("thread %d: %v", i, r)
		}
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

// TestDeterministic: a race-free kernel gives the same bytes and counters
// whatever the number of workers.
func TestDeterministic(t *testing.T) {
	run := func(workers int) ([]byte, Stats) {
		dev := NewDevice()
		m := load(t, dev, "llvm/matmul_tiled.ptx")
		const M, N, K = 40, 48, 33
		a, b := make([]float32, M*K), make([]float32, K*N)
		for i := range a {
			a[i] = float32(i%13) * 0.37
		}
		for i := range b {
			b[i] = float32(i%7) * 1.3
		}
		da, db := upload(t, dev, f32sBytes(a)), upload(t, dev, f32sBytes(b))
		dc, _ := dev.Alloc(4 * M * N)
		cfg := Config{Grid: Dim3{3, 3, 1}, Block: Dim3{16, 16, 1}, Workers: workers}
		st, err := m.Launch("matmul_tiled", cfg, da, db, dc, uint32(M), uint32(N), uint32(K))
		if err != nil {
			t.Fatal(err)
		}
		return download(t, dev, dc, 4*M*N), *st
	}
	d1, s1 := run(1)
	d4, s4 := run(4)
	if !bytes.Equal(d1, d4) || s1 != s4 {
		t.Errorf("results differ between 1 and 4 workers:\n%v\n%v", s1.String(), s4.String())
	}
}

// TestDivergentCall calls a .func from half of a warp, and from two call
// sites whose lanes reconverge inside the callee.
func TestDivergentCall(t *testing.T) {
	src := `.version 7.8
.target sm_80
.address_size 64
.func (.param .b32 r) twice(.param .b32 x)
{
	.reg .b32 %r<3>;
	ld.param.b32 %r1, [x];
	shl.b32 %r2, %r1, 1;
	st.param.b32 [r], %r2;
	ret;
}
.visible .entry k(.param .u64 out)
{
	.reg .pred %p1;
	.reg .b32 %r<5>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r3, 7;
	and.b32 %r2, %r1, 1;
	setp.eq.u32 %p1, %r2, 1;
	@%p1 bra ODD;
	{
	.param .b32 a;
	.param .b32 res;
	st.param.b32 [a], %r1;
	call.uni (res), twice, (a);
	ld.param.b32 %r3, [res];
	}
	bra.uni DONE;
ODD:
	{
	.param .b32 a;
	.param .b32 res;
	add.u32 %r4, %r1, 1000;
	st.param.b32 [a], %r4;
	call (res), twice, (a);
	ld.param.b32 %r3, [res];
	}
DONE:
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r3;
	ret;
}
`
	dev := NewDevice()
	out, _ := dev.Alloc(4 * 32)
	if _, err := load(t, dev, src).Launch("k", grid(1, 32), out); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesU32s(download(t, dev, out, 128)) {
		want := uint32(2 * i)
		if i%2 == 1 {
			want = uint32(2 * (i + 1000))
		}
		if v != want {
			t.Errorf("out[%d] = %d, want %d", i, v, want)
		}
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

// TestParamLayout: parameters are laid out from their declarations,
// including alignment and byte arrays (structs passed by value).
func TestParamLayout(t *testing.T) {
	src := kernel(".param .u8 a, .param .align 8 .b8 s[16], .param .u16 b, .param .u64 out", `
	.reg .b16 %h<3>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<3>;
	ld.param.u8 %h1, [a];
	ld.param.u32 %r1, [s+4];
	ld.param.u64 %rd1, [s+8];
	ld.param.u16 %h2, [b];
	ld.param.u64 %rd2, [out];
	cvt.u32.u16 %r2, %h1;
	cvt.u32.u16 %r3, %h2;
	st.global.v4.u32 [%rd2], {%r2, %r1, %r3, %r3};
	st.global.u64 [%rd2+16], %rd1;`)
	dev := NewDevice()
	m := load(t, dev, src)
	ps, err := m.Params("k")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ps) != "[{a u8 1 1} {s b8 16 8} {b u16 2 2} {out u64 8 8}]" {
		t.Errorf("params: %v", ps)
	}
	out, _ := dev.Alloc(24)
	s := []byte{0, 0, 0, 0, 7, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}
	if _, err := m.Launch("k", grid(1, 1), uint8(200), s, uint16(0xBEEF), out); err != nil {
		t.Fatal(err)
	}
	got := download(t, dev, out, 24)
	if w := bytesU32s(got[:16]); w[0] != 200 || w[1] != 7 || w[2] != 0xBEEF {
		t.Errorf("got %v", w)
	}
	if !bytes.Equal(got[16:], s[8:]) {
		t.Errorf("struct bytes %v", got[16:])
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

func TestInfiniteLoopStops(t *testing.T) {
	src := kernel("", "L:\n\tbra.uni L;")
	cfg := grid(1, 32)
	cfg.MaxSteps = 100000
	_, err := load(t, NewDevice(), src).Launch("k", cfg)
	mustErr(t, err, "error", "block did not finish within 100000 warp instructions", "line 7")
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

// TestSplitWarpBarrier: half of warp 1 waits at a non-aligned named barrier
// while its other half loops; the barrier completes from other warps while
// the looping half is mid-loop.
func TestSplitWarpBarrier(t *testing.T) {
	src := kernel(".param .u64 out", `
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 31;
	shr.u32 %r3, %r1, 5;
	setp.lt.u32 %p1, %r2, 16;
	setp.eq.u32 %p2, %r3, 0;
	or.pred %p1, %p1, %p2;
	mov.u32 %r4, 0;
	@!%p1 bra WORK;
	barrier.sync 1, 64;
	mov.u32 %r4, 100;
	bra.uni DONE;
WORK:
	add.u32 %r4, %r4, 1;
	setp.lt.u32 %p3, %r4, 5000;
	@%p3 bra WORK;
DONE:
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r4;`)
	dev := NewDevice()
	out, _ := dev.Alloc(4 * 96)
	if _, err := load(t, dev, src).Launch("k", grid(1, 96), out); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesU32s(download(t, dev, out, 4*96)) {
		want := uint32(5000)
		if i < 32 || i%32 < 16 {
			want = 100
		}
		if v != want {
			t.Fatalf("thread %d: %d, want %d", i, v, want)
		}
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

func TestDeviceMemory(t *testing.T) {
	dev := NewDevice()
	a, _ := dev.Alloc(64)
	b, _ := dev.Alloc(64)
	if a%256 != 0 || b%256 != 0 || b-a < 64+4096 {
		t.Errorf("allocations %#x %#x are not aligned or not separated", a, b)
	}
	if err := dev.Memset(a, 7, 32); err != nil {
		t.Fatal(err)
	}
	if err := dev.Copy(b, a, 64); err != nil {
		t.Fatal(err)
	}
	got := download(t, dev, b, 64)
	if got[31] != 7 || got[32] != poisonByte {
		t.Errorf("copy: %v", got)
	}
	// The poisoned half stays "never written" after the copy.
	src := kernel(".param .u64 p", `
	.reg .b32 %r1;
	.reg .b64 %rd1;
	ld.param.u64 %rd1, [p];
	ld.global.u32 %r1, [%rd1+32];`)
	_, err := load(t, dev, src).Launch("k", grid(1, 1), b)
	mustErr(t, err, "memcheck", "uninitialized global load", "32 bytes into allocation #2")
	if dev.Allocated() != 128 {
		t.Errorf("allocated %d", dev.Allocated())
	}
	for _, err := range []error{dev.Copy(b, a, 65), dev.Write(a+60, make([]byte, 8)), dev.Free(a + 1), dev.Read(0, make([]byte, 1))} {
		if err == nil {
			t.Error("out-of-range host operation succeeded")
		}
	}
	if err := dev.Free(a); err != nil || dev.Allocated() != 64 {
		t.Errorf("free: %v, %d allocated", err, dev.Allocated())
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

// TestModuleVariables: initialized .global and .const variables, a pointer
// initialized with generic(var), and a write to .const being refused.
func TestModuleVariables(t *testing.T) {
	src := `.version 7.8
.target sm_80
.address_size 64
.global .align 4 .u32 table[4] = {10, 20, 30, 40};
.global .align 8 .u64 ptr = generic(table);
.const .align 4 .f32 coef[2] = {0f3F000000, 0f40000000};
.global .align 4 .u32 counter;

.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<6>;
	.reg .f32 %f<3>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	ld.global.u64 %rd2, [ptr];
	ld.u32 %r1, [%rd2+8];
	ld.const.f32 %f1, [coef+4];
	ld.global.u32 %r2, [counter];
	atom.global.add.u32 %r3, [counter], 1;
	cvt.rzi.u32.f32 %r4, %f1;
	st.global.v4.u32 [%rd1], {%r1, %r4, %r2, %r3};
}
.visible .entry bad()
{
	.reg .b64 %rd1;
	mov.u64 %rd1, coef;
	st.global.f32 [%rd1], 0f00000000;
}
`
	dev := NewDevice()
	m := load(t, dev, src)
	out, _ := dev.Alloc(16)
	if _, err := m.Launch("k", grid(1, 1), out); err != nil {
		t.Fatal(err)
	}
	if got := bytesU32s(download(t, dev, out, 16)); got[0] != 30 || got[1] != 2 || got[2] != 0 || got[3] != 0 {
		t.Errorf("got %v", got)
	}
	if addr, ok := m.GlobalAddr("counter"); !ok || bytesU32s(download(t, dev, addr, 4))[0] != 1 {
		t.Errorf("counter at %#x: %v", addr, ok)
	}
	_, err := m.Launch("bad", grid(1, 1))
	mustErr(t, err, "memcheck", "store to read-only variable coef")
	before := dev.Allocated()
	m.Close()
	if got := dev.Allocated(); got != before-16-8-8-4 {
		t.Errorf("after Close: %d bytes allocated, want %d", got, before-36)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

// TestDynamicShared: an extern .shared array gets Config.SharedBytes after
// the static shared variables; indexing past it is out of bounds.
func TestDynamicShared(t *testing.T) {
	src := `.version 7.8
.target sm_80
.address_size 64
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u64 out, .param .u32 n)
{
	.shared .align 4 .b8 fixed[12];
	.reg .pred %p1;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	mov.u32 %r3, dyn;
	mov.u32 %r6, fixed;
	shl.b32 %r4, %r2, 2;
	add.u32 %r5, %r3, %r4;
	st.shared.u32 [%r5], %r2;
	setp.eq.u32 %p1, %r2, 0;
	@%p1 st.shared.u32 [%r6], %r3;
	bar.sync 0;
	sub.u32 %r7, %r1, 1;
	sub.u32 %r7, %r7, %r2;
	shl.b32 %r7, %r7, 2;
	add.u32 %r7, %r3, %r7;
	ld.shared.u32 %r7, [%r7];
	mov.u32 %r6, %dynamic_smem_size;
	mul.wide.u32 %rd2, %r2, 8;
	add.s64 %rd3, %rd1, %rd2;
	st.global.v2.u32 [%rd3], {%r7, %r6};
}
`
	dev := NewDevice()
	m := load(t, dev, src)
	out, _ := dev.Alloc(8 * 64)
	cfg := grid(1, 64)
	cfg.SharedBytes = 256
	if _, err := m.Launch("k", cfg, out, uint32(64)); err != nil {
		t.Fatal(err)
	}
	got := bytesU32s(download(t, dev, out, 8*64))
	for i := 0; i < 64; i++ {
		if got[2*i] != uint32(63-i) || got[2*i+1] != 256 {
			t.Fatalf("thread %d: %v", i, got[2*i:2*i+2])
		}
	}
	cfg.SharedBytes = 128
	_, err := m.Launch("k", cfg, out, uint32(64))
	mustErr(t, err, "memcheck", "out-of-bounds shared store of 4 bytes at shared offset 0x90 (block has 144 bytes of shared memory)", "thread (32,0,0)")
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}
