package golden

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// Owners orders the sections of a shared golden file by the package that writes them, in
// pipeline order: an example's golden holds its source graph, then what the passes made of it,
// then its PTX. Sections of other owners follow, in the order they were added.
var Owners = []string{"source", "passes", "ptx"}

// CheckSections checks the sections of the txtar archive at path that belong to owner (named
// "owner/NAME"; sections gives them without the prefix) against sections, or rewrites them
// under -update. Other owners' sections are left as they are: several packages keep their parts
// of one example's golden file, and `go test ./... -update` may rewrite them at the same time
// (updates hold a lock on the file's directory). comment is the archive's leading comment.
func CheckSections(t testing.TB, path, comment, owner string, sections []txtar.File) {
	t.Helper()
	prefix := owner + "/"
	mine := make([]txtar.File, len(sections))
	for i, s := range sections {
		mine[i] = txtar.File{Name: prefix + s.Name, Data: s.Data}
	}
	if *update {
		if err := updateSections(path, comment, prefix, mine); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	var have []txtar.File
	for _, f := range txtar.Parse(data).Files {
		if strings.HasPrefix(f.Name, prefix) {
			have = append(have, f)
		}
	}
	for _, s := range mine {
		i := slices.IndexFunc(have, func(f txtar.File) bool { return f.Name == s.Name })
		if i < 0 {
			t.Errorf("%s: no section %q (run go test -update)", path, s.Name)
			continue
		}
		if diff := cmp.Diff(string(have[i].Data), string(s.Data)); diff != "" {
			t.Errorf("%s, section %s differs (-want +got):\n%s", path, s.Name, diff)
		}
	}
	for _, f := range have {
		if !slices.ContainsFunc(mine, func(s txtar.File) bool { return s.Name == f.Name }) {
			t.Errorf("%s has a section %s the test no longer makes (run go test -update)", path, f.Name)
		}
	}
}

func updateSections(path, comment, prefix string, mine []txtar.File) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	a := &txtar.Archive{Comment: []byte(comment)}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		a = txtar.Parse(data)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	files := slices.DeleteFunc(a.Files, func(f txtar.File) bool { return strings.HasPrefix(f.Name, prefix) })
	files = append(files, mine...)
	slices.SortStableFunc(files, func(x, y txtar.File) int { return ownerRank(x.Name) - ownerRank(y.Name) })
	a.Files = files
	return os.WriteFile(path, txtar.Format(a), 0o644)
}

// ownerRank places a section by its owner: the Owners in order, then any other.
func ownerRank(name string) int {
	owner, _, _ := strings.Cut(name, "/")
	if i := slices.Index(Owners, owner); i >= 0 {
		return i
	}
	return len(Owners)
}

// Example returns the golden file of an example model ("cnn", or "fashion_mlp" for
// examples/fashion/mlp), given the path of the module root from the test's package, and the
// comment the file starts with.
func Example(root, name string) (path, comment string) {
	model := "examples/" + strings.Replace(name, "_", "/", 1) + "/model.go"
	return filepath.Join(root, "testdata", "golden", name+".txtar"),
		"gcomp golden file for " + model + ": its graph (source/), the pass pipeline's kernel graph, memory plan and cost report (passes/), and its PTX (ptx/); regenerate with go test ./... -update\n"
}
