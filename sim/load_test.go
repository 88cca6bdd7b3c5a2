package sim

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
)

func TestLoadErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"\tsad.u32 %r1, %r1, %r1, %r1;", "9:2: sad.u32: unsupported instruction"},
		{"\tadd.s32 %r1, %r1, %q;", "9:20: undefined name %q"},
		{"\tbra NOWHERE;", "9:6: undefined label NOWHERE"},
		{"\tadd.fancy.s32 %r1, %r1, 1;", "unsupported instruction add.fancy.s32 (modifier .fancy)"},
		{"\tdp2a.u32.u32 %r1, %r1, %r1, %r1;", "dp2a.u32.u32: needs .lo or .hi"},
		{"\tdiv.f32 %r1, %r1, %r1;", "div.f32 needs .approx, .full or a rounding mode"},
		{"\t@%r1 ret;", "9:2: guard %r1 is not a predicate register"},
		{"\tmov.u32 %tid.x, 1;", "cannot write special register %tid.x"},
		{"\tcall.uni foo;", "undefined function foo"},
		{"\tld.global.s32 %f1, [%rd1];", "9:16: register %f1 of type .f32 does not fit a .s32 result"},
		{"\tadd.f32 %f1, %f1, %r1;", "9:20: register %r1 of type .u32 does not fit a .f32 operand"},
		{"\tmov.f32 %f1, %r1;", "register %r1 of type .u32 does not fit a .f32 operand"},
	} {
		src := kernel("", "\t.reg .u32 %r1;\n\t.reg .f32 %f1;\n\t.reg .b64 %rd1;\n"+c.body)
		_, err := NewDevice().Load(src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want error containing %q", c.body, err, c.want)
		}
		if _, ok := err.(*SyntaxError); err != nil && !ok {
			t.Errorf("%s: error is %T, want *SyntaxError", c.body, err)
		}
	}
}

func TestLaunchErrors(t *testing.T) {
	dev := NewDevice()
	m := load(t, dev, "saxpy.ptx")
	for _, c := range []struct {
		kernel string
		cfg    Config
		args   []any
		want   string
	}{
		{"nope", grid(1, 1), nil, `no kernel "nope" in module (kernels: saxpy)`},
		{"saxpy", grid(1, 1), []any{uint64(0)}, "takes 4 parameters, got 1"},
		{"saxpy", grid(1, 1), []any{uint64(0), uint64(0), float64(1), uint32(1)}, "argument 2 (saxpy_param_2): parameter .f32 has 4 bytes, argument float64 has 8"},
		{"saxpy", grid(1, 2048), []any{uint64(0), uint64(0), float32(1), uint32(1)}, "exceeds 1024 threads"},
		{"saxpy", grid(0, 1), []any{uint64(0), uint64(0), float32(1), uint32(1)}, "must be positive"},
		{"saxpy", Config{Grid: Dim3{1, 1, 1}, Block: Dim3{1, 1, 1}, SharedBytes: 300 << 10}, []any{uint64(0), uint64(0), float32(1), uint32(1)}, "exceed"},
	} {
		_, err := m.Launch(c.kernel, c.cfg, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// FuzzLoad: decoding arbitrary text never panics.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.ptx")
	llvm, _ := filepath.Glob("testdata/llvm/*.ptx")
	for _, p := range append(files, llvm...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		NewDevice().Load(src)
	})
}

// TestTypeCheckingAgreesWithPtxas: register operands of the wrong kind are
// rejected at load time exactly when NVIDIA's assembler rejects them.
func TestTypeCheckingAgreesWithPtxas(t *testing.T) {
	ptxas.Require(t)
	for _, body := range []string{
		"ld.global.s32 %f1, [%rd1];",
		"ld.global.f32 %r1, [%rd1];",
		"st.global.u32 [%rd1], %f1;",
		"add.f32 %f1, %f1, %r1;",
		"add.s32 %r1, %f1, %r2;",
		"mov.f32 %f1, %r1;",
		"mov.b32 %f1, %r1;",
		"mov.u32 %r1, %r2;",
		"ld.global.u8 %r1, [%rd1];",
		"cvt.u32.u16 %r1, %r1;",
		"cvt.rn.f32.s32 %f1, %r2;",
		"cvt.rn.f32.s32 %r1, %f1;",
		"add.s32 %r1, %r1, %r2;",
		"selp.f32 %f1, %f1, %f1, %p1;",
		"selp.f32 %f1, %f1, %f1, %r1;",
		"setp.lt.f32 %p1, %f1, %f1;",
		"setp.lt.s32 %p1, %f1, %r1;",
		"atom.global.add.f32 %f1, [%rd1], %f1;",
		"atom.global.add.u32 %f1, [%rd1], %r1;",
		"shfl.sync.bfly.b32 %f1, %f1, 1, 31, -1;",
		"cvta.to.shared.u32 %r1, %rd1;",
		"cvta.to.shared.u32 %r1, %r2;",
		"cvta.shared.u64 %rd1, %r1;",
		"cvta.to.global.u64 %rd1, %rd1;",
		"mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f16 {%f1, %f1, %f1, %f1}, {%b1, %b1}, {%b1}, {%b1, %b1};",
		"mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f32 {%b1, %b1}, {%b1, %b1}, {%b1}, {%f1, %f1, %f1, %f1};",
		"mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1, %f1, %f1, %f1}, {%b1, %b1}, {%b1}, {%f1, %f1, %f1, %f1};",
		"bar.warp.sync -1;",
		"bar.warp.sync %r1;",
		"prmt.b32.ecl %r1, %r1, %r2, %r1;",
		"fma.rn.relu.f32 %f1, %f1, %f1, %f1;",
		"cvt.rn.relu.f32.f16 %f1, %h1;",
		"cvt.rn.relu.f16.f32 %h1, %f1;",
		"fma.rn.relu.f16 %h1, %h1, %h1, %h1;",
		"mov.u32 %r1, %globaltimer_hi;",
	} {
		src := kernel("", "\t.reg .u32 %r1;\n\t.reg .s32 %r2;\n\t.reg .f32 %f1;\n\t.reg .b16 %h1;\n\t.reg .b32 %b1;\n\t.reg .b64 %rd1;\n\t.reg .pred %p1;\n\t"+body)
		_, simErr := NewDevice().Load(src)
		_, asErr := ptxas.Assemble([]byte(src), "sm_80")
		if (simErr == nil) != (asErr == nil) {
			t.Errorf("%s: simulator says %v, ptxas says %v", body, simErr, asErr)
		}
	}
}

// TestHugeModuleVariable: a module variable gets memory only when a launch
// or the host uses it, so loading one of 1 GiB is instant (FuzzLoad found
// such a line taking 16 s and 2 GB).
func TestHugeModuleVariable(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	dev := NewDevice()
	m, err := dev.Load(".version 7.8\n.target sm_80\n.address_size 64\n.global .b8 g[1073741823];\n.global .u32 h[1073741] = {7, 8};\n")
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := int64(after.TotalAlloc - before.TotalAlloc); grew > 1<<20 {
		t.Errorf("Load allocated %d bytes", grew)
	}
	if got, want := dev.Allocated(), int64(1073741823+4*1073741); got != want {
		t.Errorf("Allocated() = %d, want %d", got, want)
	}
	// The small one reads back its initializer and zeros.
	addr, ok := m.GlobalAddr("h")
	if !ok {
		t.Fatal("no variable h")
	}
	b := make([]byte, 12)
	if err := dev.Read(addr, b); err != nil {
		t.Fatal(err)
	}
	if got := bytesU32s(b); got[0] != 7 || got[1] != 8 || got[2] != 0 {
		t.Errorf("h[:3] = %v, want [7 8 0]", got)
	}
	if _, err := dev.Load(".global .b8 x[1073741823];\n.global .b8 y[1073741823];\n.global .b8 z[1073741823];\n.global .b8 w[1073741823];\n.global .b8 v[1073741823];\n.global .b8 u[1073741823];\n.global .b8 s[1073741823];\n.global .b8 r[1073741823];\n.global .b8 q[1073741823];\n"); err == nil || !strings.Contains(err.Error(), "out of device memory") {
		t.Errorf("9 GiB of variables: %v, want out of device memory", err)
	}
}

// issueForms are instruction forms issue 3 lists (and LLVM emits), one of
// each kind and variant, as ptxas 11.8 accepts them for sm_80.
const issueForms = `
	ld.volatile.global.u32 %r1, [%rd1];
	ld.const.u32 %r1, [%rd1];
	ld.local.u32 %r1, [%rd1];
	st.local.u32 [%rd1], %r1;
	ld.u32 %r1, [%rd1];
	st.volatile.shared.u32 [%r2], %r1;
	ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
	ldu.global.u32 %r1, [%rd1];
	ld.global.nc.v2.f32 {%f1, %f2}, [%rd1];
	cvt.rna.tf32.f32 %r1, %f1;
	cvt.rn.f16.f64 %h1, %fd1;
	cvt.f64.f16 %fd1, %h1;
	cvt.rzi.s64.f16 %rd1, %h1;
	cvt.rn.f16.s32 %h1, %r1;
	cvt.f32.bf16 %f1, %h1;
	cvt.rpi.f16.f16 %h1, %h2;
	cvt.sat.f16.f16 %h1, %h2;
	mad.wide.u16 %r1, %h1, %h2, %r1;
	mad.lo.u64 %rd1, %rd1, %rd1, %rd1;
	mad.hi.sat.s32 %r1, %r1, %r1, %r1;
	add.cc.u32 %r1, %r1, %r1;
	addc.cc.u32 %r1, %r1, %r1;
	sub.cc.u64 %rd1, %rd1, %rd1;
	subc.u64 %rd1, %rd1, %rd1;
	madc.hi.cc.u32 %r1, %r1, %r1, %r1;
	sub.sat.s32 %r1, %r1, %r1;
	div.full.f32 %f1, %f1, %f1;
	div.rn.ftz.f32 %f1, %f1, %f1;
	div.approx.ftz.f32 %f1, %f1, %f1;
	rem.u64 %rd1, %rd1, %rd1;
	abs.f64 %fd1, %fd1;
	abs.s16 %h1, %h2;
	neg.s64 %rd1, %rd1;
	min.u16 %h1, %h1, %h2;
	max.f64 %fd1, %fd1, %fd1;
	min.NaN.f16x2 %r1, %r1, %r1;
	min.ftz.NaN.f32 %f1, %f1, %f1;
	and.pred %p1, %p1, %p2;
	or.pred %p1, %p1, %p2;
	xor.pred %p1, %p1, %p2;
	not.pred %p1, %p1;
	cnot.b16 %h1, %h2;
	not.b64 %rd1, %rd1;
	popc.b64 %r1, %rd1;
	clz.b64 %r1, %rd1;
	brev.b64 %rd1, %rd1;
	bfe.s64 %rd1, %rd1, %r1, %r1;
	bfi.b64 %rd1, %rd1, %rd1, %r1, %r1;
	shr.u16 %h1, %h2, %r1;
	setp.ne.f64 %p1, %fd1, %fd1;
	setp.lt.f16 %p1, %h1, %h2;
	setp.gtu.ftz.f32 %p1, %f1, %f1;
	selp.f64 %fd1, %fd1, %fd1, %p1;
	set.lt.u32.f32 %r1, %f1, %f1;
	set.eq.f32.s32 %f1, %r1, %r1;
	slct.f32.s32 %f1, %f1, %f1, %r1;
	slct.ftz.u32.f32 %r1, %r1, %r1, %f1;
	mov.pred %p1, %p2;
	mov.u64 %rd1, %rd1;
	mov.b32 {%h1, %h2}, %r1;
	mov.b64 {%r1, %r2}, %rd1;
	mov.f64 %fd1, 0d3FF0000000000000;
	fma.rn.ftz.sat.f32 %f1, %f1, %f1, %f1;
	fma.rz.f64 %fd1, %fd1, %fd1, %fd1;
	rcp.approx.ftz.f64 %fd1, %fd1;
	rcp.rn.ftz.f32 %f1, %f1;
	rsqrt.approx.f64 %fd1, %fd1;
	rsqrt.approx.ftz.f64 %fd1, %fd1;
	sqrt.rz.f64 %fd1, %fd1;
	sqrt.rn.ftz.f32 %f1, %f1;
	ex2.approx.f16 %h1, %h2;
	ex2.approx.f16x2 %r1, %r1;
	lg2.approx.f32 %f1, %f1;
	sin.approx.f32 %f1, %f1;
	cos.approx.ftz.f32 %f1, %f1;
	tanh.approx.f32 %f1, %f1;
	tanh.approx.f16 %h1, %h2;
	tanh.approx.f16x2 %r1, %r1;
	add.f16x2 %r1, %r1, %r1;
	sub.f16x2 %r1, %r1, %r1;
	sub.rn.f16 %h1, %h1, %h2;
	mul.rn.f16x2 %r1, %r1, %r1;
	add.ftz.sat.f16x2 %r1, %r1, %r1;
	fma.rn.sat.f16x2 %r1, %r1, %r1, %r1;
	max.bf16x2 %r1, %r1, %r1;
	min.bf16 %h1, %h1, %h2;
	min.NaN.bf16x2 %r1, %r1, %r1;
	neg.f16x2 %r1, %r1;
	abs.f16x2 %r1, %r1;
	neg.bf16x2 %r1, %r1;
	abs.bf16 %h1, %h2;
	fma.rn.bf16x2 %r1, %r1, %r1, %r1;
	shfl.sync.up.b32 %r1|%p1, %r1, 1, 0, -1;
	vote.sync.ballot.b32 %r1, %p1, -1;
	vote.sync.all.pred %p1, %p1, -1;
	vote.sync.uni.pred %p1, !%p1, -1;
	activemask.b32 %r1;
	match.any.sync.b64 %r1, %rd1, -1;
	match.all.sync.b32 %r1|%p1, %r1, -1;
	bar.sync 1, 64;
	barrier.sync 0;
	barrier.sync.aligned 0;
	barrier.arrive 1, 64;
	bar.red.popc.u32 %r1, 0, %p1;
	bar.red.and.pred %p1, 0, %p1;
	barrier.red.or.pred %p1, 0, 64, %p1;
	membar.gl;
	fence.sc.gpu;
	atom.global.add.u64 %rd1, [%rd1], %rd1;
	atom.global.add.f64 %fd1, [%rd1], %fd1;
	atom.global.add.noftz.f16x2 %r1, [%rd1], %r1;
	atom.global.add.noftz.f16 %h1, [%rd1], %h1;
	atom.shared.add.f32 %f1, [%r2], %f1;
	atom.global.min.s32 %r1, [%rd1], %r1;
	atom.global.max.u64 %rd1, [%rd1], %rd1;
	atom.shared.max.s64 %rd1, [%r2], %rd1;
	atom.global.inc.u32 %r1, [%rd1], %r1;
	atom.shared.dec.u32 %r1, [%r2], %r1;
	atom.global.cas.b64 %rd1, [%rd1], %rd1, %rd1;
	atom.shared.cas.b64 %rd1, [%r2], %rd1, %rd1;
	atom.global.exch.b64 %rd1, [%rd1], %rd1;
	atom.global.or.b64 %rd1, [%rd1], %rd1;
	atom.acq_rel.gpu.global.add.u32 %r1, [%rd1], %r1;
	atom.relaxed.sys.cas.b32 %r1, [%rd1], %r1, %r1;
	atom.add.u32 %r1, [%rd1], %r1;
	red.global.add.f32 [%rd1], %f1;
	red.global.and.b32 [%rd1], %r1;
	red.shared.or.b32 [%r2], %r1;
	red.global.inc.u32 [%rd1], %r1;
	red.shared.dec.u32 [%r2], %r1;
	red.global.min.u64 [%rd1], %rd1;
	red.global.add.noftz.f16x2 [%rd1], %r1;
	red.release.gpu.global.add.u32 [%rd1], %r1;
	mov.u32 %r1, %nsmid;
	mov.u32 %r1, %gridid;
	mov.u64 %rd1, %gridid;
	mov.u32 %r1, %lanemask_lt;
	mov.u32 %r1, %dynamic_smem_size;
	mov.u64 %rd1, %clock64;
	ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r1, %r2, %r3, %r4}, [%r2];
	ldmatrix.sync.aligned.x2.m8n8.shared.b16 {%r1, %r2}, [%r2];
	cp.async.ca.shared.global [%r2], [%rd1], 4;
	cp.async.cg.shared.global [%r2], [%rd1], 16, %r1;
	cp.async.wait_all;
	isspacep.shared %p1, %rd1;
	cvta.local.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd1, %rd1;
	cvta.const.u64 %rd1, %rd1;
	testp.finite.f64 %p1, %fd1;
	copysign.f64 %fd1, %fd1, %fd1;
	mul24.hi.s32 %r1, %r1, %r1;
	shf.l.clamp.b32 %r1, %r1, %r1, %r1;
	lop3.b32 %r1, %r1, %r1, %r1, 0xF0;
	bfind.s64 %r1, %rd1;
	nanosleep.u32 %r1;
	bra.uni L;
L:
	exit;`

// TestIssueFormsDecode: the simulator decodes every listed form, and the
// module assembles, so the list holds only real PTX.
func TestIssueFormsDecode(t *testing.T) {
	regs := "\t.reg .pred %p<3>;\n\t.reg .b16 %h<3>;\n\t.reg .b32 %r<5>;\n\t.reg .f32 %f<5>;\n\t.reg .f64 %fd<2>;\n\t.reg .b64 %rd<2>;\n"
	src := kernel("", regs+issueForms)
	if _, err := NewDevice().Load(src); err != nil {
		t.Error(err)
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src) })
}
