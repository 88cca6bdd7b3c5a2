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

// A column inside text the loader inserted maps to the insertion's column, never before the
// line's start (an error once read "model.go:10:-16:").
func TestOrigCol(t *testing.T) {
	// Line 10: "\tx := f(a)" with 20 bytes of tracing inserted at column 7 (before "f").
	ins := insertions{{offset: 100, end: 100, line: 10, col: 7, text: strings.Repeat("t", 20)}}
	for _, tc := range []struct{ col, want int }{
		{0, 1},   // no column before the first
		{1, 1},   // before the insertion
		{6, 6},   // just before it
		{7, 7},   // its first inserted byte
		{20, 7},  // inside it
		{27, 7},  // the original "f", shifted by 20
		{30, 10}, // after it
	} {
		if got := ins.origCol(10, tc.col); got != tc.want {
			t.Errorf("origCol(10, %d) = %d, want %d", tc.col, got, tc.want)
		}
		if got := ins.origCol(11, tc.col); got != max(tc.col, 1) {
			t.Errorf("origCol(11, %d) = %d on a line without insertions", tc.col, got)
		}
	}
}
