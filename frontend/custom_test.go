package frontend_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ops"
)

func identity(in []*frontend.HostTensor, _ []float64) *frontend.HostTensor { return in[0] }

// A kernel's File is read from the model's folder and never from outside it.
func TestCustomFile(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	if err := os.MkdirAll(filepath.Join(dir, "kernels"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "extern \"C\" __global__ void k(const float* x, float* y) {}\n"
	for path, text := range map[string]string{
		filepath.Join(dir, "k.cu"):            src,
		filepath.Join(dir, "kernels", "k.cu"): src,
		filepath.Join(dir, "k.ptx"):           ".version 7.8\n",
		filepath.Join(root, "secret.cu"):      "outside",
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "secret.cu"), filepath.Join(dir, "link.cu")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, want, lang, name string // want: an error, or "" with the file name and lang recorded
	}{
		{file: "k.cu", lang: "cuda", name: "k.cu"},
		{file: "kernels/../kernels/k.cu", lang: "cuda", name: "kernels/k.cu"},
		{file: "k.ptx", lang: "ptx", name: "k.ptx"},
		{file: "../secret.cu", want: `File "../secret.cu" is outside the model's folder`},
		{file: "kernels/../../secret.cu", want: "is outside the model's folder"},
		{file: filepath.Join(root, "secret.cu"), want: "give a path relative to the model's folder"},
		{file: "link.cu", want: `File "link.cu" leads outside the model's folder`},
		{file: "nope.cu", want: `File "nope.cu": no such file beside the model`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			g, err := frontend.Build("m", func(b *frontend.Builder) {
				x := b.Input("x", frontend.F32, 8)
				b.Output("y", b.Custom(frontend.Kernel{Name: "k", File: tc.file, Reference: identity}, x))
			}, frontend.WithDir(dir))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `custom op "k"`) {
					t.Errorf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v := g.Outputs[0].Value
			if v.Op != ops.CustomOp || v.Attrs.String("file", "") != tc.name || v.Attrs.String("lang", "") != tc.lang {
				t.Errorf("op %s file %q lang %q", v.Op, v.Attrs.String("file", ""), v.Attrs.String("lang", ""))
			}
		})
	}
}

func TestCustomDeclarationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    frontend.Kernel
		want string
	}{
		{"no reference", frontend.Kernel{Name: "k", Source: "x"}, `custom op "k": no Reference function`},
		{"no source", frontend.Kernel{Name: "k", Reference: identity}, "give the kernel's Source or its File"},
		{"both", frontend.Kernel{Name: "k", Source: "x", File: "k.cu", Reference: identity}, "give the kernel's Source or its File"},
		{"bad name", frontend.Kernel{Name: "my op", Source: "x", Reference: identity}, `name "my op" is not an identifier`},
		{"big block", frontend.Kernel{Name: "k", Source: "x", Reference: identity, Block: [3]int{2048}}, "more than 1024 threads"},
		{"negative block", frontend.Kernel{Name: "k", Source: "x", Reference: identity, Grid: [3]int{2, 1, 1}, Block: [3]int{-256, 1, 1}}, "Block [-256 1 1]: dimension 0 is negative"},
		{"negative block default grid", frontend.Kernel{Name: "k", Source: "x", Reference: identity, Block: [3]int{-256}}, "Block [-256 0 0]: dimension 0 is negative"},
		{"negative block y", frontend.Kernel{Name: "k", Source: "x", Reference: identity, Block: [3]int{32, -1, 1}}, "dimension 1 is negative"},
		{"zero block inside", frontend.Kernel{Name: "k", Source: "x", Reference: identity, Block: [3]int{32, 0, 2}}, "Block [32 0 2]: dimension 1 is zero"},
		{"zero block x", frontend.Kernel{Name: "k", Source: "x", Reference: identity, Block: [3]int{0, 4, 1}}, "dimension 0 is zero"},
		{"grid without block", frontend.Kernel{Name: "k", Source: "x", Reference: identity, Grid: [3]int{2, 1, 1}}, "a kernel with a Grid needs its Block too"},
		{"negative grid", frontend.Kernel{Name: "k", Source: "x", Reference: identity, Grid: [3]int{-2, 1, 1}, Block: [3]int{4, 1, 1}}, "grid [-2 1 1] is not 3 positive ints"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := frontend.Build("m", func(b *frontend.Builder) {
				x := b.Input("x", frontend.F32, 8)
				b.Output("y", b.Custom(tc.k, x))
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "custom_test.go:") {
				t.Errorf("err = %v, want %q at custom_test.go:LINE", err, tc.want)
			}
		})
	}
}

// One thread per element by default: blocks of 256, or of Block[0].
func TestCustomLaunchDefault(t *testing.T) {
	for _, tc := range []struct {
		block       [3]int
		grid, bdims []int
	}{
		{[3]int{}, []int{4, 1, 1}, []int{256, 1, 1}},
		{[3]int{128}, []int{8, 1, 1}, []int{128, 1, 1}},
		{[3]int{128, 0, 0}, []int{8, 1, 1}, []int{128, 1, 1}},
	} {
		g, err := frontend.Build("m", func(b *frontend.Builder) {
			x := b.Input("x", frontend.F32, 10, 100)
			b.Output("y", b.Custom(frontend.Kernel{Name: "k", Source: "x", Block: tc.block, Reference: identity}, x))
		})
		if err != nil {
			t.Fatal(err)
		}
		a := g.Outputs[0].Value.Attrs
		if got := a.Ints("grid"); !slices.Equal(got, tc.grid) || !slices.Equal(a.Ints("block"), tc.bdims) {
			t.Errorf("block %v: grid %v block %v", tc.block, got, a.Ints("block"))
		}
	}
}
