package nccltest

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

//go:embed testdata/stubnccl.c
var source []byte

// Build compiles the stub library with the C compiler ($CC, else gcc) into a
// temporary directory and returns its path (named libnccl.so.2). Without a
// compiler the test skips, unless CI is set: there it fails.
func Build(t testing.TB) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no C compiler to build the stub NCCL library (CI is set): %v", err)
		}
		t.Skipf("no C compiler to build the stub NCCL library: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "stubnccl.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libnccl.so.2")
	if out, err := exec.Command(cc, "-Wall", "-shared", "-fPIC", "-O1", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	return lib
}
