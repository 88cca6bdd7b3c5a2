package executor_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimeDoesNotImportPasses keeps the runtime on the artifact's side of the pipeline: every
// package under runtime/ runs a launch plan and must not depend, even indirectly, on the
// optimizer that made it (passes/ and what imports it, such as compiler/).
func TestRuntimeDoesNotImportPasses(t *testing.T) {
	const module = "github.com/gcomp/gcomp/"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"runtime/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if !strings.HasPrefix(fields[0], module+"runtime/") {
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			if dep == module+"passes" || strings.HasPrefix(dep, module+"passes/") || dep == module+"compiler" {
				t.Errorf("%s depends on %s", strings.TrimPrefix(fields[0], module), strings.TrimPrefix(dep, module))
			}
		}
	}
	if checked < 5 {
		t.Fatalf("go list named %d runtime packages; want every package under runtime/", checked)
	}
}
