package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
)

// gcomp build --cubin stores one cubin per architecture beside the module and lists them in the
// plan; a device that cannot load them (the simulator-backed driver runs PTX only) falls back to
// the PTX and computes the same outputs. Without ptxas the build notes it and writes PTX only.
func TestBuildCubins(t *testing.T) {
	p := ptxas.Require(t)
	t.Setenv("GCOMP_PTXAS", p) // found before the test leaves the repository
	dir := fixture(t)
	t.Chdir(dir)
	gcomp := func(args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != 0 {
			t.Fatalf("gcomp %s: exit status %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		return out.String(), errOut.String()
	}
	gcomp("build", "model.go", "-o", "m.ptx", "--cubin", "sm_80,sm_90")
	a, err := artifact.Read("m.ptx")
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"sm_80", "sm_90"} {
		if img := a.Cubins[arch]; !bytes.HasPrefix(img, []byte("\x7fELF")) {
			t.Errorf("%s cubin: %q…, want an ELF image", arch, img[:min(len(img), 8)])
		}
	}
	gcomp("run", "m.ptx", "--device", "ref", "--input", "x=x.npy", "--output-dir", "ref")
	testDriver = simdriver.New()
	defer func() { testDriver = nil }()
	gcomp("run", "m.ptx", "--device", "cuda:0", "--input", "x=x.npy", "--output-dir", "gpu")
	want, _ := os.ReadFile("ref/y.npy")
	if got, _ := os.ReadFile("gpu/y.npy"); !bytes.Equal(got, want) {
		t.Error("the run on cuda:0 differs from the reference interpreter's")
	}

	t.Setenv("GCOMP_PTXAS", "/nonexistent/ptxas")
	_, stderr := gcomp("build", "model.go", "-o", "p.ptx", "--cubin", "sm_80")
	if !strings.Contains(stderr, "no cubins") || !strings.Contains(stderr, "PTX only") {
		t.Errorf("stderr without ptxas = %q", stderr)
	}
	if a, err := artifact.Read("p.ptx"); err != nil || len(a.Plan.Cubins) != 0 {
		t.Errorf("without ptxas: %v, cubins %v", err, a.Plan.Cubins)
	}
}
