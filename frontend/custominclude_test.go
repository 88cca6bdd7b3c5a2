package frontend_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// A kernel's #include is inlined from the model's folder, never read from outside it nor from
// the working directory, and never blocks on a named pipe.
func TestCustomIncludes(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	for path, text := range map[string]string{
		"model/a.h":          "#pragma once\n#define A 2.0f\n",
		"model/kernels/b.h":  "#include \"a.h\"\n#define B (A * 3.0f)\n",
		"model/kernels/k.cu": "#include \"b.h\"\n#include \"a.h\"\nextern \"C\" __global__ void k(const float* x, float* y) { y[0] = B; }\n",
		"model/self.h":       "#include \"self.h\"\n",
		"model/up.cu":        "#include \"../secret.h\"\n",
		"model/abs.cu":       "#include \"" + filepath.Join(root, "secret.h") + "\"\n",
		"model/angle.cu":     "#include <a.h>\n",
		"model/macro.cu":     "#define H \"a.h\"\n#include H\n",
		"model/missing.cu":   "// k\n#include \"cuda_fp16.h\"\n",
		"model/self.cu":      "#include \"self.h\"\n",
		"model/link.cu":      "#include \"link.h\"\n",
		"model/fifo.cu":      "#include \"pipe.h\"\n",
		"secret.h":           "1,2,3\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "secret.h"), filepath.Join(dir, "link.h")); err != nil {
		t.Fatal(err)
	}
	for _, fifo := range []string{"pipe.h", "pipe.cu"} {
		if err := syscall.Mkfifo(filepath.Join(dir, fifo), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	for _, tc := range []struct{ file, want string }{
		{"kernels/k.cu", ""},
		{"up.cu", `up.cu:1: #include "../secret.h": "../secret.h" is outside the model's folder`},
		{"abs.cu", `is not a relative name of a file in the model's folder`},
		{"angle.cu", ""},
		{"macro.cu", `macro.cu:2: #include H: gcomp inlines only #include "name" and #include <name>`},
		{"missing.cu", `missing.cu:2: #include "cuda_fp16.h": no such file in the model's folder`},
		{"self.cu", "#include nested deeper than 32"},
		{"link.cu", `link.cu:1: #include "link.h": file name "link.h" resolves (through a symbolic link)`},
		{"fifo.cu", `fifo.cu:1: #include "pipe.h": pipe.h is a named pipe, not a regular file`},
		{"pipe.cu", `File "pipe.cu" is a named pipe, not a regular file`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			done := make(chan struct{})
			var g *ir.Graph
			var err error
			go func() {
				defer close(done)
				g, err = frontend.Build("m", func(b *frontend.Builder) {
					x := b.Input("x", frontend.F32, 8)
					b.Output("y", b.Custom(frontend.Kernel{Name: "k", File: tc.file, Reference: identity}, x))
				}, frontend.WithDir(dir))
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Build blocked")
			}
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			src := g.Outputs[0].Value.Attrs.String("source", "")
			if strings.Contains(src, "#include") {
				t.Errorf("an #include is left:\n%s", src)
			}
			if tc.file == "kernels/k.cu" {
				// b.h is beside k.cu; a.h, at the folder, is inlined once (#pragma once); the
				// lines after each header are numbered as in k.cu.
				want := "#line 1 \"kernels/b.h\"\n#line 1 \"a.h\"\n#pragma once\n#define A 2.0f\n#line 2 \"kernels/b.h\"\n#define B (A * 3.0f)\n" +
					"#line 2 \"kernels/k.cu\"\n#line 3 \"kernels/k.cu\"\nextern \"C\""
				if !strings.HasPrefix(src, want) {
					t.Errorf("source:\n%s\nwant it to start with:\n%s", src, want)
				}
			}
		})
	}
}
