package symbols

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCurrent regenerates the symbol files in a temporary directory and compares them with the
// committed ones, so that a DSL change without `go generate ./load/symbols` fails here.
func TestCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the yaegi extractor (needs the go command)")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	cmd := exec.Command(goCmd, "run", "github.com/traefik/yaegi/cmd/yaegi", "extract", "-name", "symbols",
		"github.com/gcomp/gcomp/ir", "github.com/gcomp/gcomp/frontend", "github.com/gcomp/gcomp/frontend/nn")
	cmd.Dir = dir
	writeScratchModule(t, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("yaegi extract: %v\n%s", err, out)
	}
	gen, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	have, _ := filepath.Glob("github_com-*.go")
	if len(gen) != len(have) {
		t.Fatalf("generated %d symbol files, %d committed: run go generate ./load/symbols", len(gen), len(have))
	}
	for _, g := range gen {
		want, _ := os.ReadFile(g)
		got, err := os.ReadFile(filepath.Base(g))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s is stale: run go generate ./load/symbols", filepath.Base(g))
		}
	}
}

// writeScratchModule makes dir a module that requires this one through a replace directive, so
// that the extractor can write its output there instead of over the committed files.
func writeScratchModule(t *testing.T, dir string) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod := "module scratch\n\ngo 1.24\n\nrequire (\n\tgithub.com/gcomp/gcomp v0.0.0\n\tgithub.com/traefik/yaegi " + yaegiVersion(t) +
		"\n)\n\nreplace github.com/gcomp/gcomp => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
}

func yaegiVersion(t *testing.T) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/traefik/yaegi").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return strings.TrimSpace(string(out))
}
