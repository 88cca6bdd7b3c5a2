package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"\tsad.u32 %r1, %r1, %r1, %r1;", "7:2: sad.u32: unsupported instruction"},
		{"\tadd.s32 %r1, %r1, %q;", "7:20: undefined name %q"},
		{"\tbra NOWHERE;", "7:6: undefined label NOWHERE"},
		{"\tadd.fancy.s32 %r1, %r1, 1;", "unsupported instruction add.fancy.s32 (modifier .fancy)"},
		{"\tdiv.f32 %r1, %r1, %r1;", "div.f32 needs .approx, .full or a rounding mode"},
		{"\t@%r1 ret;", "7:2: guard %r1 is not a predicate register"},
		{"\tmov.u32 %tid.x, 1;", "cannot write special register %tid.x"},
		{"\tcall.uni foo;", "undefined function foo"},
	} {
		src := kernel("", "\t.reg .b32 %r1;\n"+c.body)
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
