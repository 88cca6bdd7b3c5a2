package libnvvm

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

const okModule = `target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @k_copy(float* %in, float* %out) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %p = getelementptr float, float* %in, i32 %t
  %v = load float, float* %p, align 4
  %q = getelementptr float, float* %out, i32 %t
  store float %v, float* %q, align 4
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

!nvvm.annotations = !{!0}
!0 = !{void (float*, float*)* @k_copy, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 1, i32 8}
`

func TestCompile(t *testing.T) {
	l := Require(t)
	maj, _, err := l.Version()
	if err != nil || maj < 1 {
		t.Fatalf("Version: %d, %v", maj, err)
	}
	irMaj, _, _, _, err := l.IRVersion()
	if err != nil || irMaj < 1 {
		t.Fatalf("IRVersion: %d, %v", irMaj, err)
	}
	ptx, log, err := l.Compile("k_copy", []Module{{Name: "m", Data: []byte(okModule)}}, "-arch=compute_80")
	if err != nil {
		t.Fatal(err)
	}
	if log != "" {
		t.Errorf("warnings for a clean module: %s", log)
	}
	for _, want := range []string{".target sm_80", ".entry k_copy", "ld.global.f32", "st.global.f32", "%tid.x"} {
		if !strings.Contains(string(ptx), want) {
			t.Errorf("PTX lacks %q:\n%s", want, ptx)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	l := Require(t)
	for _, tc := range []struct {
		name, module string
		opts         []string
		want         []string
	}{
		{"k_syntax", "define void @k_syntax( {", []string{"-arch=compute_80"}, []string{"k_syntax: ", "NVVM_ERROR"}},
		{"k_undef", strings.Replace(okModule, "%v, float* %q", "%undefined, float* %q", 1), []string{"-arch=compute_80"}, []string{"k_undef: ", "undefined"}},
		{"k_copy", okModule, []string{"-arch=compute_12"}, []string{"k_copy: ", "NVVM_ERROR_INVALID_OPTION"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := l.Compile(tc.name, []Module{{Name: "m", Data: []byte(tc.module)}}, tc.opts...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestNoLibrary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libnvvm.so")
	_, err := Load(missing)
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("err = %v, want ErrNoLibrary", err)
	}
	for _, w := range []string{missing, "fetch-cuda-tools.sh --nvvm", "--nvvm-lib", Env} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	t.Setenv(Env, missing)
	if c := Candidates(""); len(c) != 1 || c[0] != missing {
		t.Errorf("Candidates with $%s = %v", Env, c)
	}
	t.Setenv(Env, "")
	c := Candidates("")
	if len(c) < 2 || c[len(c)-1] == "" || !strings.Contains(strings.Join(c, " "), debianPath) {
		t.Errorf("Candidates = %v, want the toolkit and Debian paths", c)
	}
}
