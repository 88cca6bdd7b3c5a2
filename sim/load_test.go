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
