package ptxas

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNeeds12(t *testing.T) {
	for _, c := range []struct {
		ptx, arch string
		want      bool
	}{
		{".version 7.8\n.target sm_80\n", "sm_80", false},
		{".version 7.8\n.target sm_90\n", "sm_90", false},
		{".version 7.0\n", "sm_80", false},
		{"", "sm_86", false},
		{".version 7.8\n", "sm_89", true},
		{".version 8.0\n", "sm_90a", true},
		{"// x\n  .version 8.1\n", "sm_90", true},
		{".version 10.0\n", "sm_90", true},
	} {
		if got := Needs12([]byte(c.ptx), c.arch); got != c.want {
			t.Errorf("Needs12(%q, %s) = %v, want %v", c.ptx, c.arch, got, c.want)
		}
	}
}

func TestAssemble12(t *testing.T) {
	Require12(t)
	ptx, err := os.ReadFile("testdata/fp8.ptx")
	if err != nil {
		t.Fatal(err)
	}
	// Assemble sends sm_89 (PTX 8.1) to ptxas 12.4; sm_90 takes it too.
	for _, arch := range []string{"sm_89", "sm_90", "sm_90a"} {
		res, err := Assemble(ptx, arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if k := res.Kernel("fp8"); k == nil || k.Registers == 0 {
			t.Errorf("%s: Result = %+v", arch, res)
		}
	}
	// CUDA 11.8's ptxas refuses PTX ISA 8.1, which is why Assemble routes it.
	if _, err := Find(); err == nil {
		bin, _ := Find()
		if _, _, err := assembleWith(bin, ptx, "sm_90"); err == nil || !strings.Contains(err.Error(), "Unsupported .version 8.1") {
			t.Errorf("ptxas 11.8 on PTX 8.1: %v", err)
		}
	}
	// sm_80 has no fp8 cvt.
	sm80 := strings.Replace(string(ptx), ".target sm_89", ".target sm_80", 1)
	if _, err := Assemble12([]byte(sm80), "sm_80"); err == nil || !strings.Contains(err.Error(), "e4m3x2") {
		t.Errorf("fp8 cvt for sm_80: %v", err)
	}
}

func TestFind12(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "ptxas")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GCOMP_PTXAS12", fake)
	if p, err := Find12(); err != nil || p != fake {
		t.Errorf("Find12() = %q, %v; want %q", p, err, fake)
	}
	t.Setenv("GCOMP_PTXAS12", filepath.Join(dir, "missing"))
	if _, err := Find12(); err == nil || !strings.Contains(err.Error(), "GCOMP_PTXAS12") {
		t.Errorf("Find12() with a missing GCOMP_PTXAS12 = %v", err)
	}

	// The module-root cache is found from a subdirectory; CUDA 11.8's cache is not CUDA 12's.
	t.Setenv("GCOMP_PTXAS12", "")
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644)
	old := filepath.Join(root, ".cache", "cuda", "usr", "bin")
	bin := filepath.Join(root, ".cache", "cuda12", "bin")
	sub := filepath.Join(root, "a")
	for _, d := range []string{old, bin, sub} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(old, "ptxas"), []byte("#!/bin/sh\n"), 0o755)
	t.Chdir(sub)
	if _, err := Find12(); err == nil || !strings.Contains(err.Error(), "--cuda12") {
		t.Errorf("Find12() with only CUDA 11.8 = %v", err)
	}
	os.WriteFile(filepath.Join(bin, "ptxas"), []byte("#!/bin/sh\n"), 0o755)
	if p, err := Find12(); err != nil || p != filepath.Join(bin, "ptxas") {
		t.Errorf("Find12() from %s = %q, %v", sub, p, err)
	}
}
