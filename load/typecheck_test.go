package load

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestModelTypesCurrent regenerates modeltypes.bin and compares it with the embedded one, so that
// a DSL change without `go generate ./load` fails here.
func TestModelTypesCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds export data with the go command")
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Skip("no go command")
	}
	embedded, _, _ := bytes.Cut(modelTypes, []byte("\n"))
	if string(embedded) != strings.TrimSpace(string(goVersion)) {
		t.Skipf("modeltypes.bin describes %s's standard library, this is %s", embedded, goVersion)
	}
	out := filepath.Join(t.TempDir(), "modeltypes.bin")
	cmd := exec.Command("go", append([]string{"run", "./internal/gentypes", "-o", out}, modelImports...)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gentypes: %v\n%s", err, msg)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, modelTypes) {
		t.Errorf("modeltypes.bin is stale: run go generate ./load")
	}
}
