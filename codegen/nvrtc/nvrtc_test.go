package nvrtc

import (
	"errors"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	_ "github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/internal/ptxas"
)

const swish = `extern "C" __global__ void swish(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / (1.0f + expf(-x[i]));
}
`

// TestCompileAssembles compiles a kernel and assembles the PTX for sm_80 and sm_90.
func TestCompileAssembles(t *testing.T) {
	c := Require(t)
	if c.Major < 11 {
		t.Fatalf("version %d.%d", c.Major, c.Minor)
	}
	ptx, err := c.Compile(swish, "swish.cu", "compute_80")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".target sm_80", ".visible .entry swish(", ".loc\t", `.file	1 "swish.cu"`} {
		if !strings.Contains(ptx, want) {
			t.Errorf("PTX lacks %q:\n%s", want, ptx)
		}
	}
	ptxas.Require(t)
	for _, arch := range []string{"sm_80", "sm_90"} {
		res, err := ptxas.Assemble([]byte(ptx), arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if res.Kernel("swish") == nil {
			t.Errorf("%s: no swish in %+v", arch, res.Kernels)
		}
	}
}

// TestCompileCached compiles the same source twice and NVRTC runs once.
func TestCompileCached(t *testing.T) {
	c := Require(t)
	src := swish + "// cache test\n"
	before := c.Compiles()
	a, err := c.Compile(src, "swish.cu", "compute_80")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Compile(src, "swish.cu", "compute_80")
	if a != b || c.Compiles() != before+1 {
		t.Errorf("second compile was not cached: %d compiles", c.Compiles()-before)
	}
	if _, err := c.Compile(src, "swish.cu", "compute_90"); err != nil {
		t.Fatal(err)
	}
	if c.Compiles() != before+2 {
		t.Errorf("another arch was not compiled anew")
	}
}

func TestCompileErrors(t *testing.T) {
	c := Require(t)
	for _, tc := range []struct{ name, src, want string }{
		{"undefined", "extern \"C\" __global__ void k(float* y) {\n  y[0] = x;\n}\n", `^bad.cu:2: error: identifier "x" is undefined$`},
		{"syntax", "extern \"C\" __global__ void k(float* y) {\n  y[0] = 1\n}\n", `^bad.cu:3: error: expected a ";"$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Compile(tc.src, "bad.cu", "compute_80")
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a CompileError", err)
			}
			if !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Errorf("err = %q, want %s\nlog:\n%s", err, tc.want, ce.Log)
			}
		})
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "libnvrtc.so"))
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("err = %v, want ErrNoLibrary", err)
	}
	for _, want := range []string{"libnvrtc.so", "libnvrtc11.2", "--nvrtc-lib", LibraryEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// BenchmarkCompile is NVRTC's time per kernel: each iteration compiles a new source.
func BenchmarkCompile(b *testing.B) {
	c := Require(b)
	for i := 0; b.Loop(); i++ {
		if _, err := c.Compile(swish+"// "+strconv.Itoa(i)+"\n", "swish.cu", "compute_80"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileCached is the same source again: the cache answers.
func BenchmarkCompileCached(b *testing.B) {
	c := Require(b)
	if _, err := c.Compile(swish, "swish.cu", "compute_80"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.Compile(swish, "swish.cu", "compute_80"); err != nil {
			b.Fatal(err)
		}
	}
}

// A source whose headers gcomp inlined between #line directives compiles; the PTX names each
// header by its name in the model's folder, not under the working directory, and an error in a
// header is reported at the header's line.
func TestCompileInlinedHeaders(t *testing.T) {
	c := Require(t)
	src := "#line 1 \"kernels/a.h\"\n__device__ float twice(float x) { return 2.0f * x; }\n#line 2 \"k.cu\"\n" +
		"extern \"C\" __global__ void k(float* y) {\n  y[0] = twice(y[0]);\n}\n"
	ptx, err := c.Compile(src, "k.cu", "compute_80")
	if err != nil {
		t.Fatal(err)
	}
	files := regexp.MustCompile(`(?m)^\s*\.file\s+\d+\s+(".*")`).FindAllStringSubmatch(ptx, -1)
	var got []string
	for _, f := range files {
		got = append(got, f[1])
	}
	if s := strings.Join(got, " "); s != `"k.cu" "kernels/a.h"` {
		t.Errorf(".file names %s, want \"k.cu\" \"kernels/a.h\"", s)
	}
	_, err = c.Compile(strings.Replace(src, "2.0f * x;", "2.0f * x", 1), "k.cu", "compute_80")
	if err == nil || !strings.HasPrefix(err.Error(), `kernels/a.h:1: error: expected a ";"`) {
		t.Errorf("err = %v, want it at kernels/a.h:1", err)
	}
}
