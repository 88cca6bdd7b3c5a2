package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --output-dir makes missing parents as mkdir -p does, with --device ref and sim, and an
// absolute path too; a failing run makes none.
func TestOutputDirParents(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	model := "graph g {\n  input %x : f32[2]\n  %0 = neg(%x) : f32[2]\n  output y = %0\n}\n"
	if err := os.WriteFile("neg.gir", []byte(model), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		out  string
		args []string
	}{
		{"a/b", nil},
		{"a/c/d/e", []string{"--device", "sim"}},
		{filepath.Join(dir, "abs", "x", "y"), []string{"--save-inputs"}},
		{"a/b/inner", nil}, // under an output directory made before
	} {
		gcompOK(t, append([]string{"run", "neg.gir", "--output-dir", tc.out}, tc.args...)...)
		if readNPY(t, filepath.Join(tc.out, "y.npy")).Len() != 2 {
			t.Errorf("%s/y.npy is not the output", tc.out)
		}
	}
	before := listFiles(t, ".")
	gcompFails(t, "nope.npy", "run", "neg.gir", "--input", "x=nope.npy", "--output-dir", "new/parent/out")
	if after := listFiles(t, "."); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("a failing run left %v", after)
	}
}

// A file or a symbolic link in the way of the directories to make is one clear error, and
// nothing is made.
func TestOutputDirInTheWay(t *testing.T) {
	t.Chdir(t.TempDir())
	model := "graph g {\n  input %x : f32[2]\n  %0 = neg(%x) : f32[2]\n  output y = %0\n}\n"
	for name, text := range map[string]string{"neg.gir": model, "file": "x", "real/keep": "x"} {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("real", "link")
	os.Symlink("nowhere", "dangling")
	os.MkdirAll("real/sub", 0o755)
	for _, tc := range []struct{ out, want string }{
		{"file/out", "cannot write file/out: file is a file, not a directory"},
		{"file/x/y/out", "cannot write file/x/y/out: file is a file, not a directory"},
		{"file", "cannot write to file: it is a file, not a directory"},
		{"link/new/out", "cannot write link/new/out: link is a symbolic link; give the path without it"},
		{"link/sub/new/out", "cannot write link/sub/new/out: link is a symbolic link; give the path without it"},
		{"dangling/out", "cannot write dangling/out: dangling is a symbolic link to nothing"},
		{"dangling/x/out", "cannot write dangling/x/out: dangling is a symbolic link to nothing"},
	} {
		before := listFiles(t, ".")
		for _, dev := range []string{"ref", "sim"} {
			gcompFails(t, tc.want, "run", "neg.gir", "--device", dev, "--output-dir", tc.out)
		}
		if after := listFiles(t, "."); strings.Join(after, "\n") != strings.Join(before, "\n") {
			t.Errorf("%s: files before %v, after %v", tc.out, before, after)
		}
	}
	// A link that is the output directory's parent is followed, as before.
	gcompOK(t, "run", "neg.gir", "--output-dir", "link/out")
	if readNPY(t, "real/out/y.npy").Len() != 2 {
		t.Error("real/out/y.npy is not the output")
	}
}

// makeDirs makes directories outermost first and undoes only what it made: after a failure
// part way, and when asked.
func TestMakeDirsUndo(t *testing.T) {
	t.Chdir(t.TempDir())
	os.Mkdir("old", 0o755)
	os.WriteFile("file", nil, 0o644)
	if _, err := makeDirs([]string{"n", "n/m", "file/x"}); err == nil || !strings.Contains(err.Error(), "cannot create file/x") {
		t.Errorf("makeDirs through a file: %v", err)
	}
	if _, err := os.Stat("n"); err == nil {
		t.Error("a failed makeDirs left n")
	}
	undo, err := makeDirs([]string{"old", "old/a", "old/a/b"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat("old/a/b"); err != nil || !st.IsDir() {
		t.Fatalf("old/a/b: %v", err)
	}
	undo()
	if _, err := os.Stat("old/a"); err == nil {
		t.Error("undo left old/a")
	}
	if _, err := os.Stat("old"); err != nil {
		t.Error("undo removed old, which it did not make")
	}
}
