package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// mmaCase is one supported mma.sync shape and type combination.
type mmaCase struct {
	k      int
	atype  string // f16, bf16, tf32
	ctype  string // f32, f16 (d has the same type)
	useLdm bool   // feed A and B through ldmatrix (16-bit types)
}

// ptxGen builds the body of a one-warp kernel.
type ptxGen struct {
	b strings.Builder
	n int
}

func (p *ptxGen) f(format string, args ...any) { fmt.Fprintf(&p.b, "\t"+format+"\n", args...) }

// addr emits base + ((g+roff)*stride + q*qmul + coff)*esize into %rd9 and
// returns "%rd9": the fragment index math of the PTX ISA's layout tables.
func (p *ptxGen) addr(base string, roff, stride, qmul, coff, esize int) string {
	p.f("add.u32 %%r90, %%r2, %d;", roff)
	p.f("mul.lo.u32 %%r90, %%r90, %d;", stride)
	p.f("mad.lo.u32 %%r90, %%r3, %d, %%r90;", qmul)
	p.f("add.u32 %%r90, %%r90, %d;", coff)
	p.f("mul.wide.u32 %%rd9, %%r90, %d;", esize)
	p.f("add.s64 %%rd9, %s, %%rd9;", base)
	return "%rd9"
}

func mmaKernel(c mmaCase) string {
	p := &ptxGen{}
	p.f(".shared .align 16 .b8 sA[512];")
	p.f(".shared .align 16 .b8 sB[256];")
	p.f(".reg .b32 %%r<100>;")
	p.f(".reg .b64 %%rd<10>;")
	p.f("ld.param.u64 %%rd1, [pa];")
	p.f("ld.param.u64 %%rd2, [pb];")
	p.f("ld.param.u64 %%rd3, [pc];")
	p.f("ld.param.u64 %%rd4, [pd];")
	p.f("mov.u32 %%r1, %%tid.x;")
	p.f("shr.u32 %%r2, %%r1, 2;") // groupID
	p.f("and.b32 %%r3, %%r1, 3;") // threadID_in_group
	var a, b []string
	if c.useLdm {
		// Stage A (16 x k) and B (k x 8), row-major 16-bit, in shared memory.
		abytes, bbytes := 16*c.k*2, c.k*8*2
		for _, s := range []struct {
			src, dst string
			n        int
		}{{"%rd1", "sA", abytes / 32}, {"%rd2", "sB", bbytes / 32}} {
			p.f("mul.wide.u32 %%rd5, %%r1, %d;", s.n)
			p.f("add.s64 %%rd6, %s, %%rd5;", s.src)
			p.f("mov.u64 %%rd7, %s;", s.dst)
			p.f("cvt.u32.u64 %%r4, %%rd7;")
			p.f("cvt.u32.u64 %%r5, %%rd5;")
			p.f("add.u32 %%r4, %%r4, %%r5;")
			switch s.n {
			case 16:
				p.f("ld.global.v4.u32 {%%r10, %%r11, %%r12, %%r13}, [%%rd6];")
				p.f("st.shared.v4.u32 [%%r4], {%%r10, %%r11, %%r12, %%r13};")
			case 8:
				p.f("ld.global.v2.u32 {%%r10, %%r11}, [%%rd6];")
				p.f("st.shared.v2.u32 [%%r4], {%%r10, %%r11};")
			default:
				p.f("ld.global.u32 %%r10, [%%rd6];")
				p.f("st.shared.u32 [%%r4], %%r10;")
			}
		}
		p.f("bar.sync 0;")
		// A: lane l gives row l%16 (and column block l/16 for k=16).
		p.f("and.b32 %%r6, %%r1, 15;")
		p.f("mov.u32 %%r7, sA;")
		p.f("mad.lo.u32 %%r7, %%r6, %d, %%r7;", c.k*2)
		if c.k == 16 {
			p.f("shr.u32 %%r8, %%r1, 4;")
			p.f("mad.lo.u32 %%r7, %%r8, 16, %%r7;")
			p.f("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%%r20, %%r21, %%r22, %%r23}, [%%r7];")
			a = []string{"%r20", "%r21", "%r22", "%r23"}
			// B: k x 8 row-major; .trans gives the column-major fragment.
			p.f("mov.u32 %%r7, sB;")
			p.f("mad.lo.u32 %%r7, %%r6, 16, %%r7;")
			p.f("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%%r24, %%r25}, [%%r7];")
			b = []string{"%r24", "%r25"}
		} else {
			p.f("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%%r20, %%r21}, [%%r7];")
			a = []string{"%r20", "%r21"}
			p.f("and.b32 %%r6, %%r1, 7;")
			p.f("mov.u32 %%r7, sB;")
			p.f("mad.lo.u32 %%r7, %%r6, 16, %%r7;")
			p.f("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%%r24}, [%%r7];")
			b = []string{"%r24"}
		}
	} else {
		// tf32 m16n8k8 from global: a_i at row g+8*(i%2), col q+4*(i/2);
		// b_i at row q+4*i, col g.
		for i := 0; i < 4; i++ {
			p.f("ld.global.b32 %%r%d, [%s];", 20+i, p.addr("%rd1", 8*(i&1), 8, 1, 4*(i>>1), 4))
			p.f("cvt.rna.tf32.f32 %%r%d, %%r%d;", 20+i, 20+i)
			a = append(a, fmt.Sprintf("%%r%d", 20+i))
		}
		for i := 0; i < 2; i++ {
			p.f("add.u32 %%r91, %%r3, %d;", 4*i)
			p.f("mad.lo.u32 %%r91, %%r91, 8, %%r2;")
			p.f("mul.wide.u32 %%rd8, %%r91, 4;")
			p.f("add.s64 %%rd8, %%rd2, %%rd8;")
			p.f("ld.global.b32 %%r%d, [%%rd8];", 24+i)
			p.f("cvt.rna.tf32.f32 %%r%d, %%r%d;", 24+i, 24+i)
			b = append(b, fmt.Sprintf("%%r%d", 24+i))
		}
	}
	// C and D: c_i at row g+8*(i/2), col 2q+(i%2); f16 packs pairs.
	var cr, dr []string
	if c.ctype == "f32" {
		for i := 0; i < 4; i++ {
			p.f("ld.global.b32 %%r%d, [%s];", 30+i, p.addr("%rd3", 8*(i>>1), 8, 2, i&1, 4))
			cr = append(cr, fmt.Sprintf("%%r%d", 30+i))
			dr = append(dr, fmt.Sprintf("%%r%d", 40+i))
		}
	} else {
		for i := 0; i < 2; i++ {
			p.f("ld.global.b32 %%r%d, [%s];", 30+i, p.addr("%rd3", 8*i, 8, 2, 0, 2))
			cr = append(cr, fmt.Sprintf("%%r%d", 30+i))
			dr = append(dr, fmt.Sprintf("%%r%d", 40+i))
		}
	}
	p.f("mma.sync.aligned.m16n8k%d.row.col.%s.%s.%s.%s {%s}, {%s}, {%s}, {%s};", c.k, c.ctype, c.atype, c.atype, c.ctype,
		strings.Join(dr, ", "), strings.Join(a, ", "), strings.Join(b, ", "), strings.Join(cr, ", "))
	if c.ctype == "f32" {
		for i := 0; i < 4; i++ {
			p.f("st.global.b32 [%s], %%r%d;", p.addr("%rd4", 8*(i>>1), 8, 2, i&1, 4), 40+i)
		}
	} else {
		for i := 0; i < 2; i++ {
			p.f("st.global.b32 [%s], %%r%d;", p.addr("%rd4", 8*i, 8, 2, 0, 2), 40+i)
		}
	}
	return kernel(".param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd", p.b.String())
}

// quantize rounds x to the input type and returns its bits and value.
func quantize(x float64, t string) (uint64, float64) {
	switch t {
	case "f16":
		b := encode(x, fmtF16, rn)
		return b, f16(b)
	case "bf16":
		b := encode(x, fmtBF16, rn)
		return b, bf16(b)
	}
	b := toF32(x, rn)
	return b, f32(b &^ 0x1FFF) // tensor cores read 10 mantissa bits of tf32
}

func TestMmaAgainstMatmul(t *testing.T) {
	cases := []mmaCase{
		{16, "f16", "f32", true}, {16, "f16", "f16", true}, {16, "bf16", "f32", true},
		{8, "f16", "f32", true}, {8, "f16", "f16", true}, {8, "bf16", "f32", true}, {8, "tf32", "f32", false},
	}
	rng := rand.New(rand.NewSource(1))
	for _, c := range cases {
		name := fmt.Sprintf("m16n8k%d.%s.%s", c.k, c.atype, c.ctype)
		t.Run(name, func(t *testing.T) {
			src := mmaKernel(c)
			dev := NewDevice()
			m := load(t, dev, src)
			for trial := 0; trial < 5; trial++ {
				A, ab := randMatrix(rng, 16*c.k, 2, c.atype)
				B, bb := randMatrix(rng, c.k*8, 2, c.atype)
				C, cb := randMatrix(rng, 16*8, 4, c.ctype)
				da, db, dc := upload(t, dev, ab), upload(t, dev, bb), upload(t, dev, cb)
				dd, _ := dev.Alloc(len(cb))
				if _, err := m.Launch("k", grid(1, 32), da, db, dc, dd); err != nil {
					t.Fatal(err)
				}
				got := download(t, dev, dd, len(cb))
				for r := 0; r < 16; r++ {
					for col := 0; col < 8; col++ {
						want := C[r*8+col]
						for k := 0; k < c.k; k++ {
							want += A[r*c.k+k] * B[k*8+col]
						}
						var g float64
						var tol float64
						if c.ctype == "f32" {
							g = f32(uint64(binary.LittleEndian.Uint32(got[4*(r*8+col):])))
							tol = 1e-5 * math.Max(1, math.Abs(want))
						} else {
							g = f16(uint64(binary.LittleEndian.Uint16(got[2*(r*8+col):])))
							tol = 1e-3 * math.Max(1, math.Abs(want))
						}
						if math.Abs(g-want) > tol {
							t.Fatalf("trial %d D[%d][%d] = %v, want %v", trial, r, col, g, want)
						}
					}
				}
			}
			t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
		})
	}
}

// randMatrix returns n random values in [-r, r) rounded to type typ, and
// their bytes (tf32 inputs are given as f32: the kernel rounds them).
func randMatrix(rng *rand.Rand, n int, r float64, typ string) ([]float64, []byte) {
	vals := make([]float64, n)
	size := 2
	if typ == "f32" || typ == "tf32" {
		size = 4
	}
	buf := make([]byte, n*size)
	for i := range vals {
		x := rng.Float64()*2*r - r
		bits, v := quantize(x, typ)
		switch typ {
		case "tf32":
			bits = toF32(x, rn)
			v = f32(cvtTF32(bits))
		case "f32":
			bits = toF32(x, rn)
			v = f32(bits)
		}
		vals[i] = v
		if size == 2 {
			binary.LittleEndian.PutUint16(buf[2*i:], uint16(bits))
		} else {
			binary.LittleEndian.PutUint32(buf[4*i:], uint32(bits))
		}
	}
	return vals, buf
}

// cvtTF32 is cvt.rna.tf32.f32: round to 10 mantissa bits, ties away.
func cvtTF32(b uint64) uint64 {
	in := inst{rnd: rna}
	return cvtFn(tTF32, tF32)(&in, b, 0, 0, 0)
}

func TestMmaDivergedWarp(t *testing.T) {
	src := kernel("", `
	.reg .pred %p1;
	.reg .b32 %r<20>;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 31;
	@!%p1 bra SKIP;
	mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%r2, %r3, %r4, %r5}, {%r6, %r7}, {%r8}, {%r9, %r10, %r11, %r12};
SKIP:
	ret;`)
	_, err := load(t, NewDevice(), src).Launch("k", grid(1, 32))
	mustErr(t, err, "synccheck", "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 executed by a diverged warp", "0x7fffffff", "thread (31,0,0)")
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}

// cp.async copies land at the wait: reading before it sees the old bytes
// (here: never-written shared memory, which memcheck reports).
func TestCpAsync(t *testing.T) {
	body := `
	.shared .align 16 .b8 s[512];
	.reg .b32 %r<12>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 16;
	add.s64 %rd4, %rd1, %rd3;
	mov.u32 %r2, s;
	shl.b32 %r3, %r1, 4;
	add.u32 %r4, %r2, %r3;
	cp.async.cg.shared.global [%r4], [%rd4], 16;
	cp.async.commit_group;
	cp.async.ca.shared.global [%r4+256], [%rd4], 8, 4;
	cp.async.commit_group;
	WAIT
	ld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r4];
	ld.shared.v2.u32 {%r9, %r10}, [%r4+256];
	add.s64 %rd5, %rd2, %rd3;
	st.global.v4.u32 [%rd5], {%r5, %r6, %r7, %r8};
	st.global.v2.u32 [%rd5+512], {%r9, %r10};`
	params := ".param .u64 in, .param .u64 out"
	dev := NewDevice()
	in := make([]uint32, 64)
	for i := range in {
		in[i] = uint32(i + 1)
	}
	din := upload(t, dev, u32sBytes(in))
	out, _ := dev.Alloc(4 * 256)
	good := kernel(params, replace(body, "WAIT", "cp.async.wait_group 0;"))
	st, err := load(t, dev, good).Launch("k", grid(1, 16), din, out)
	if err != nil {
		t.Fatal(err)
	}
	// Each cp.async is one warp request (regression: lanes were counted as
	// requests of their own): 16 lanes × 16 contiguous bytes = 8 sectors, then
	// 16 lanes × 8 bytes at a 16-byte stride = 8 sectors.
	if st.GlobalLoads != 2 || st.GlobalLoadBytes != 256+128 || st.GlobalLoadSectors != 16 {
		t.Errorf("cp.async counters: %d requests, %d bytes, %d sectors; want 2, 384, 16", st.GlobalLoads, st.GlobalLoadBytes, st.GlobalLoadSectors)
	}
	got := bytesU32s(download(t, dev, out, 4*(128+64)))
	for i := 0; i < 64; i++ {
		if got[i] != in[i] {
			t.Fatalf("16-byte copy: out[%d] = %d, want %d", i, got[i], in[i])
		}
	}
	for th := 0; th < 16; th++ {
		// src-size 4 of cp-size 8: one word copied, one zero-filled.
		if w0, w1 := got[128+4*th], got[128+4*th+1]; w0 != in[4*th] || w1 != 0 {
			t.Fatalf("zero-filled copy of thread %d: %d %d", th, w0, w1)
		}
	}
	// Waiting only for the older group leaves the second copy in flight.
	partial := kernel(params, replace(body, "WAIT", "cp.async.wait_group 1;"))
	_, err = load(t, dev, partial).Launch("k", grid(1, 16), din, out)
	mustErr(t, err, "memcheck", "uninitialized shared load", "line 24")
	missing := kernel(params, replace(body, "WAIT", ""))
	_, err = load(t, dev, missing).Launch("k", grid(1, 16), din, out)
	mustErr(t, err, "memcheck", "uninitialized shared load", "line 23")
	t.Run("ptxas", func(t *testing.T) { assembles(t, good) })
}

// TestLdmatrixLayouts checks every ldmatrix form against the ISA's
// description: lane 8i+r supplies the address of row r of matrix i; lane t
// receives elements (t/4, 2(t%4)) and (t/4, 2(t%4)+1) of each matrix, or of
// its transpose with .trans. Rows are given in reverse order to show that
// each row comes from its own address.
func TestLdmatrixLayouts(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		for _, trans := range []bool{false, true} {
			name := fmt.Sprintf("x%d", n)
			tr := ""
			if trans {
				name += ".trans"
				tr = ".trans"
			}
			t.Run(name, func(t *testing.T) {
				var regs []string
				for i := 0; i < n; i++ {
					regs = append(regs, fmt.Sprintf("%%r%d", 10+i))
				}
				src := kernel(".param .u64 in, .param .u64 out", fmt.Sprintf(`
	.shared .align 16 .b8 s[512];
	.reg .b32 %%r<20>;
	.reg .b64 %%rd<6>;
	ld.param.u64 %%rd1, [in];
	ld.param.u64 %%rd2, [out];
	mov.u32 %%r1, %%tid.x;
	mul.wide.u32 %%rd3, %%r1, 16;
	add.s64 %%rd4, %%rd1, %%rd3;
	ld.global.v4.u32 {%%r2, %%r3, %%r4, %%r5}, [%%rd4];
	mov.u32 %%r6, s;
	shl.b32 %%r7, %%r1, 4;
	add.u32 %%r7, %%r6, %%r7;
	st.shared.v4.u32 [%%r7], {%%r2, %%r3, %%r4, %%r5};
	bar.sync 0;
	// lane 8i+r points at row 7-r of matrix i (matrix i is rows 8i..8i+7)
	and.b32 %%r8, %%r1, 7;
	sub.u32 %%r8, 7, %%r8;
	and.b32 %%r9, %%r1, 24;
	add.u32 %%r8, %%r8, %%r9;
	shl.b32 %%r8, %%r8, 4;
	add.u32 %%r8, %%r6, %%r8;
	ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {%s}, [%%r8];
	mul.wide.u32 %%rd3, %%r1, %d;
	add.s64 %%rd5, %%rd2, %%rd3;
%s`, n, tr, strings.Join(regs, ", "), 4*n, storeRegs(regs)))
				dev := NewDevice()
				in := make([]byte, 512)
				for m := 0; m < 4; m++ {
					for r := 0; r < 8; r++ {
						for c := 0; c < 8; c++ {
							binary.LittleEndian.PutUint16(in[(8*m+r)*16+2*c:], uint16(m*64+r*8+c))
						}
					}
				}
				din := upload(t, dev, in)
				out, _ := dev.Alloc(32 * 4 * n)
				if _, err := load(t, dev, src).Launch("k", grid(1, 32), din, out); err != nil {
					t.Fatal(err)
				}
				got := download(t, dev, out, 32*4*n)
				for lane := 0; lane < 32; lane++ {
					for m := 0; m < n; m++ {
						for j := 0; j < 2; j++ {
							r, c := lane/4, 2*(lane%4)+j
							if trans {
								r, c = c, r
							}
							want := uint16(m*64 + (7-r)*8 + c) // row r was read from the address of row 7-r
							if g := binary.LittleEndian.Uint16(got[(lane*n+m)*4+2*j:]); g != want {
								t.Fatalf("lane %d matrix %d element %d: got %d, want %d", lane, m, j, g, want)
							}
						}
					}
				}
				assembles(t, src)
			})
		}
	}
}

func storeRegs(regs []string) string {
	var b strings.Builder
	for i, r := range regs {
		fmt.Fprintf(&b, "\tst.global.b32 [%%rd5+%d], %s;\n", 4*i, r)
	}
	return b.String()
}

// A word every lane loads is requested once: the counters never report more
// requested bytes than the sectors fetched (regression: broadcasts read as
// 800% coalesced).
func TestBroadcastLoadCounters(t *testing.T) {
	src := kernel(".param .u64 in, .param .u64 out", `
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [out];
	ld.global.u32 %r1, [%rd1];
	mov.u32 %r2, %tid.x;
	mul.wide.u32 %rd3, %r2, 4;
	add.s64 %rd4, %rd2, %rd3;
	st.global.u32 [%rd4], %r1;`)
	dev := NewDevice()
	din := upload(t, dev, u32sBytes([]uint32{7}))
	out, _ := dev.Alloc(4 * 32)
	st, err := load(t, dev, src).Launch("k", grid(1, 32), din, out)
	if err != nil {
		t.Fatal(err)
	}
	if st.GlobalLoadBytes != 4 || st.GlobalLoadSectors != 1 || st.GlobalStoreBytes != 128 || st.GlobalStoreSectors != 4 {
		t.Errorf("counters: %+v", st)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}
