// Package golden compares test output with golden files the Go way: `go test ./... -update`
// rewrites them, and a mismatch is reported as a go-cmp diff "(-want +got)".
//
// Every test package of the module imports this package (blank where it has no golden files), so
// that the -update flag is defined wherever `go test ./... -update` runs.
//
// An example model has one golden file, testdata/golden/NAME.txtar, which several packages
// share: the examples' tests keep its source/ sections (the printed graph), the passes' its
// passes/ sections (kernel graph, memory plan, cost report) and codegen's its ptx/ sections.
// CheckSections checks and rewrites one owner's sections and leaves the others alone.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")

// Updating reports whether the test run was asked to rewrite golden files.
func Updating() bool { return *update }

// CheckTxtar compares sections with the txtar archive at path (sections in the given order), or
// rewrites it under -update. comment is the archive's leading comment.
func CheckTxtar(t testing.TB, path, comment string, sections []txtar.File) {
	t.Helper()
	got := txtar.Format(&txtar.Archive{Comment: []byte(comment), Files: sections})
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	wa := txtar.Parse(want)
	for _, s := range sections {
		var w []byte
		found := false
		for _, f := range wa.Files {
			if f.Name == s.Name {
				w, found = f.Data, true
			}
		}
		if !found {
			t.Errorf("%s: no section %q (run go test -update)", path, s.Name)
			continue
		}
		if diff := cmp.Diff(string(w), string(s.Data)); diff != "" {
			t.Errorf("%s, section %s differs (-want +got):\n%s", path, s.Name, diff)
		}
	}
	if len(wa.Files) != len(sections) {
		t.Errorf("%s has %d sections, the test makes %d (run go test -update)", path, len(wa.Files), len(sections))
	}
}
