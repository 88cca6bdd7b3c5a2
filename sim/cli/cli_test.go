package cli

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/tensorio"
)

const vadd = "../testdata/llvm/vadd.ptx"

func f32Array(v ...float32) *tensorio.Array {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return &tensorio.Array{DType: "f32", Shape: []int{len(v)}, Data: b}
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunVadd(t *testing.T) {
	dir := t.TempDir()
	a, b := make([]float32, 1000), make([]float32, 1000)
	for i := range a {
		a[i], b[i] = float32(i), float32(2*i)+0.5
	}
	for name, arr := range map[string]*tensorio.Array{"a": f32Array(a...), "b": f32Array(b...)} {
		if err := tensorio.WriteNPYFile(filepath.Join(dir, name+".npy"), arr); err != nil {
			t.Fatal(err)
		}
	}
	// Flags before and after the file, in both --flag value and --flag=value forms.
	code, stdout, stderr := runCLI("--entry", "vadd", vadd, "--grid=4", "--block", "256,1,1",
		"--arg", "in="+filepath.Join(dir, "a.npy"), "--arg", "in="+filepath.Join(dir, "b.npy"),
		"--arg", "out=c:f32:1000", "--arg", "u32=1000", "--output-dir", filepath.Join(dir, "out"), "--stats")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c, err := tensorio.ReadNPYFile(filepath.Join(dir, "out", "c.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if c.DType != "f32" || len(c.Shape) != 1 || c.Shape[0] != 1000 {
		t.Fatalf("c.npy: %s %v", c.DType, c.Shape)
	}
	for i := 0; i < 1000; i++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(c.Data[4*i:]))
		if got != a[i]+b[i] {
			t.Fatalf("c[%d] = %v, want %v", i, got, a[i]+b[i])
		}
	}
	for _, want := range []string{"warp instructions", "global loads", "100.0% efficiency", "barriers"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--stats output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.npy")
	if err := tensorio.WriteNPYFile(small, f32Array(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.ptx")
	os.WriteFile(bad, []byte(".version 7.8\n.target sm_80\n.entry k()\n{\n\tfrobnicate.u32 %r1;\n}\n"), 0o644)
	// A sparse file one byte over the PTX size limit: refused by its size, unread.
	sparse := filepath.Join(dir, "huge.ptx")
	if err := os.WriteFile(sparse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 256<<20+1); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.npy")
	os.WriteFile(garbage, []byte("not numpy"), 0o644)
	base := []string{vadd, "--entry", "vadd", "--grid", "1", "--block", "32"}
	args4 := func(a ...string) []string {
		out := append([]string{}, base...)
		for _, x := range a {
			out = append(out, "--arg", x)
		}
		return out
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no PTX file given"},
		{[]string{vadd}, "--entry NAME is required"},
		{[]string{vadd, "--entry", "vadd", "--block", "1"}, "--grid X[,Y[,Z]] is required"},
		{[]string{vadd, "--entry", "vadd", "--grid", "1"}, "--block X[,Y[,Z]] is required"},
		{[]string{vadd, "--entry", "vadd", "--grid", "0", "--block", "1"}, `--grid 0: dimension "0" is not a positive integer`},
		{[]string{vadd, "--entry", "vadd", "--grid", "1,2,3,4", "--block", "1"}, "at most three dimensions"},
		{[]string{vadd, "--entry", "vadd", "--grid", "1", "--block", "2048"}, "exceeds 1024 threads"},
		{[]string{vadd, "--entry"}, "flag --entry needs a value"},
		{[]string{vadd, "--bogus"}, "unknown flag --bogus"},
		{[]string{vadd, "--stats=yes"}, "flag --stats takes no value"},
		{[]string{vadd, "--race-global=1"}, "flag --race-global takes no value"},
		{append(args4(), "--block-order", "sideways"), `--block-order sideways: unknown block order "sideways"`},
		{append(args4(), "--seed", "-3"), "--seed -3: not a non-negative integer"},
		{append(args4(), "--memory-limit", "12Q"), "--memory-limit 12Q: not a positive byte count"},
		{append(args4(), "--memory-limit", "0"), "--memory-limit 0: not a positive byte count"},
		{append(args4(), "--memory-limit", "9000000000000000T"), "not a positive byte count"},
		{append(args4(), "--memory-limit", "2T"), "--memory-limit: memory limit 2199023255552 bytes: want 1 to 1099511627776"},
		{append(args4("in="+small, "in="+small, "out=c:f32:5000", "u32=3"), "--memory-limit", "16K"), "out of device memory allocating 20000 bytes: 24 of the simulator's 16384-byte limit are in use"},
		{[]string{"/dev/zero", "--entry", "k", "--grid", "1", "--block", "1"}, "/dev/zero: more than 256 MiB, the largest PTX file the simulator reads"},
		{[]string{sparse, "--entry", "k", "--grid", "1", "--block", "1"}, "huge.ptx: more than 256 MiB"},
		{[]string{dir, "--entry", "k", "--grid", "1", "--block", "1"}, "is a directory, not a PTX file"},
		{[]string{vadd, "x.ptx"}, "more than one PTX file"},
		{[]string{filepath.Join(dir, "missing.ptx"), "--entry", "k", "--grid", "1", "--block", "1"}, "no such file"},
		{[]string{bad, "--entry", "k", "--grid", "1", "--block", "1"}, "bad.ptx:5:2: frobnicate.u32: unsupported instruction"},
		{append(base[:1:1], "--entry", "nope", "--grid", "1", "--block", "1"), `no kernel "nope" in module (kernels: vadd)`},
		{args4("in=" + small), "kernel vadd takes 4 parameters, 1 --arg given"},
		{args4("in="+garbage, "in="+small, "out=c:f32:4", "u32=3"), "tensorio"},
		{args4("in="+small, "in="+small, "out=c:f99:4", "u32=3"), `unknown dtype "f99"`},
		{args4("in="+small, "in="+small, "out=../c:f32:4", "u32=3"), `bad output name "../c"`},
		{args4("in="+small, "in="+small, "out=c:f32:-1", "u32=3"), `bad element count "-1"`},
		{args4("in="+small, "in="+small, "out=c:f32", "u32=3"), "expected out=NAME:DTYPE:N"},
		{args4("in="+small, "in="+small, "out=c:f32:4", "u32=x"), `bad u32 value "x"`},
		{args4("in="+small, "in="+small, "out=c:f32:4", "u64=3"), "parameter has 4 bytes, a u64 has 8"},
		{args4("in="+small, "in="+small, "out=c:f32:4", "f32"), "expected KIND=VALUE"},
		{args4("u32=1", "in="+small, "out=c:f32:4", "u32=3"), "parameter has 8 bytes, a u32 has 4"},
		{args4("in="+small, "in="+small, "out=c:f32:4", "in="+small), "a buffer needs a 64-bit pointer parameter"},
		{args4("in="+small, "in="+small, "out=c:f32:4", "u32=3", "u32=3"), "takes 4 parameters, 5 --arg given"},
		// A check: n = 32 reads past the 3-element inputs.
		{args4("in="+small, "in="+small, "out=c:f32:32", "u32=32"), "memcheck: kernel vadd, line"},
		{args4("in="+small, "in="+small, "out=c:f32:4", "u32=4"), "out-of-bounds global load of 4 bytes at 0x10000000000c: 0 bytes past the end of allocation #1 (vadd_param_0 = " + small + ")"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != 1 {
			t.Errorf("%q: exit %d, want 1", c.args, code)
		}
		if !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "gcomp sim: ") {
			t.Errorf("%q: stderr %q, want one line containing %q", c.args, stderr, c.want)
		}
	}
}

func TestHelp(t *testing.T) {
	code, stdout, _ := runCLI("--help")
	if code != 0 || !strings.Contains(stdout, "usage: gcomp sim FILE.ptx") {
		t.Errorf("exit %d, %q", code, stdout)
	}
}

func TestNoCheckAndBF16Output(t *testing.T) {
	dir := t.TempDir()
	ptx := filepath.Join(dir, "k.ptx")
	os.WriteFile(ptx, []byte(`.version 7.8
.target sm_80
.address_size 64
.visible .entry fill(.param .u64 p, .param .f32 v)
{
	.reg .b32 %r<2>;
	.reg .b16 %h1;
	.reg .f32 %f1;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	ld.param.f32 %f1, [v];
	cvt.rn.bf16.f32 %h1, %f1;
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 2;
	add.s64 %rd3, %rd1, %rd2;
	st.global.b16 [%rd3], %h1;
}
`), 0o644)
	code, _, stderr := runCLI(ptx, "--entry", "fill", "--grid", "1", "--block", "8", "--arg", "out=y:bf16:8", "--arg", "f32=1.5", "--output-dir", dir, "--no-check")
	if code != 0 {
		t.Fatal(stderr)
	}
	y, err := tensorio.ReadNPYFile(filepath.Join(dir, "y.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if y.DType != "f32" || math.Float32frombits(binary.LittleEndian.Uint32(y.Data[28:])) != 1.5 {
		t.Errorf("y.npy: %s %v", y.DType, y.Data)
	}
}

// --race-global finds two blocks writing the same global element; the
// default run, in any --block-order, does not look.
func TestRaceGlobal(t *testing.T) {
	dir := t.TempDir()
	ptx := filepath.Join(dir, "k.ptx")
	os.WriteFile(ptx, []byte(`.version 7.8
.target sm_80
.address_size 64
.visible .entry fill(.param .u64 p)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r2;
}
`), 0o644)
	args := []string{ptx, "--entry", "fill", "--grid", "3", "--block", "8", "--arg", "out=y:u32:8", "--output-dir", dir}
	// The kernel's three blocks all write the same 8 words, so the bytes
	// left are those of the block that ran last: --block-order runs blocks
	// one at a time, in that order (a regression: in parallel the
	// simulator's own bookkeeping raced under go test -race).
	for _, c := range []struct {
		order string
		last  int // the block that runs last; -1: any, but one block's words
	}{{"in-order", 2}, {"reverse", 0}, {"random", -1}} {
		order := c.order
		if code, _, stderr := runCLI(append(args, "--block-order", order, "--seed", "7")...); code != 0 {
			t.Fatalf("--block-order %s: %s", order, stderr)
		}
		y, err := tensorio.ReadNPYFile(filepath.Join(dir, "y.npy"))
		if err != nil {
			t.Fatal(err)
		}
		last := c.last
		if last < 0 {
			last = int(binary.LittleEndian.Uint32(y.Data))
		}
		for i := 0; i < 8; i++ {
			if got, want := binary.LittleEndian.Uint32(y.Data[4*i:]), uint32(last); got != want || last > 2 {
				t.Fatalf("--block-order %s: y[%d] = %d, want %d (the last block run)", order, i, got, want)
			}
		}
	}
	code, _, stderr := runCLI(append(args, "--race-global", "--block-order", "reverse")...)
	want := "k.ptx: racecheck: kernel fill, line 13 (st.global.u32 [%rd3], %r2), thread (0,0,0), block (1,0,0): global-memory race: block (1,0,0) writes byte 0x100000000000"
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "written by block (2,0,0) at line 13") {
		t.Errorf("exit %d, stderr %q, want %q", code, stderr, want)
	}
}
