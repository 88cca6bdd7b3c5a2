package ptxas

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAssemble(t *testing.T) {
	Require(t)
	ptx, err := os.ReadFile("testdata/add.ptx")
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"sm_80", "sm_90"} {
		res, err := Assemble(ptx, arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if res.Arch != arch || len(res.Kernels) != 2 {
			t.Fatalf("%s: Result = %+v", arch, res)
		}
		add := res.Kernel("add")
		if add == nil || add.Registers < 4 || add.Registers > 64 || add.SharedBytes != 1024 || add.SpillStores != 0 {
			t.Errorf("%s: add = %+v\n%s", arch, add, res.Log)
		}
		if e := res.Kernel("empty"); e == nil || e.SharedBytes != 0 {
			t.Errorf("%s: empty = %+v", arch, e)
		}
	}
}

func TestAssembleError(t *testing.T) {
	Require(t)
	ptx, err := os.ReadFile("testdata/add.ptx")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(ptx), "add.f32 %f3, %f1, %f2;", "add.f32 %f3, %f1, %q2;", 1)
	_, err = Assemble([]byte(bad), "sm_80")
	if err == nil {
		t.Fatal("Assemble of invalid PTX succeeded")
	}
	for _, want := range []string{"ptxas -arch=sm_80", "kernel.ptx, line 25; error", "Unknown symbol '%q2'", "\t> add.f32 %f3, %f1, %q2;"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	if _, err := Assemble(ptx, "sm_nope"); err == nil {
		t.Error("Assemble for arch sm_nope succeeded")
	}
}

func TestParseLog(t *testing.T) {
	log := `ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'big' for 'sm_80'
ptxas info    : Function properties for big
    48 bytes stack frame, 24 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 255 registers, 4096 bytes smem, 372 bytes cmem[0]
ptxas info    : Compiling entry function 'small' for 'sm_80'
ptxas info    : Function properties for small
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 4 registers, 352 bytes cmem[0]
`
	want := []KernelInfo{
		{Name: "big", Registers: 255, SpillStores: 24, SpillLoads: 20, SharedBytes: 4096, StackBytes: 48},
		{Name: "small", Registers: 4},
	}
	if diff := cmp.Diff(want, parseLog(log)); diff != "" {
		t.Errorf("parseLog (-want +got):\n%s", diff)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "ptxas")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GCOMP_PTXAS", fake)
	if p, err := Find(); err != nil || p != fake {
		t.Errorf("Find() = %q, %v; want %q", p, err, fake)
	}
	t.Setenv("GCOMP_PTXAS", filepath.Join(dir, "missing"))
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "GCOMP_PTXAS") {
		t.Errorf("Find() with a missing GCOMP_PTXAS = %v", err)
	}
	t.Setenv("GCOMP_PTXAS", dir)
	if _, err := Find(); err == nil {
		t.Error("Find() accepted a directory")
	}

	// The module-root cache is found from a subdirectory.
	t.Setenv("GCOMP_PTXAS", "")
	t.Setenv("PATH", "")
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644)
	bin := filepath.Join(root, ".cache", "cuda", "usr", "bin")
	sub := filepath.Join(root, "a", "b")
	os.MkdirAll(bin, 0o755)
	os.MkdirAll(sub, 0o755)
	os.WriteFile(filepath.Join(bin, "ptxas"), []byte("#!/bin/sh\n"), 0o755)
	t.Chdir(sub)
	if p, err := Find(); err != nil || p != filepath.Join(bin, "ptxas") {
		t.Errorf("Find() from %s = %q, %v", sub, p, err)
	}
	os.Remove(filepath.Join(bin, "ptxas"))
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "fetch-cuda-tools.sh") {
		t.Errorf("Find() with nothing installed = %v", err)
	}
}
