package plan

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestProducersAreSiblings: the two PTX producers share this package and neither depends on the
// other (nor this package on either), as `go list -deps` sees their builds.
func TestProducersAreSiblings(t *testing.T) {
	const mod = "github.com/gcomp/gcomp/codegen/"
	for _, tc := range []struct {
		pkg           string
		needs, avoids []string
	}{
		{"nvvm", []string{"plan"}, []string{"ptx", "backend"}},
		{"ptx", []string{"plan"}, []string{"nvvm", "backend"}},
		{"plan", nil, []string{"ptx", "nvvm", "backend"}},
		{"backend", []string{"plan", "ptx", "nvvm"}, nil},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", mod+tc.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tc.pkg, err, out)
		}
		deps := strings.Fields(string(out))
		for _, p := range tc.needs {
			if !slices.Contains(deps, mod+p) {
				t.Errorf("codegen/%s does not depend on codegen/%s", tc.pkg, p)
			}
		}
		for _, p := range tc.avoids {
			if slices.Contains(deps, mod+p) {
				t.Errorf("codegen/%s depends on codegen/%s", tc.pkg, p)
			}
		}
	}
}

// Without codegen/ptx linked in (this package's tests cannot import it), the plans it registers
// are missing, and asking for one says so rather than dereferencing nil.
func TestUnregisteredEmitter(t *testing.T) {
	if Registered() {
		t.Fatal("an emitter is registered in codegen/plan's own tests")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "codegen/ptx") {
			t.Errorf("recovered %v, want a panic naming codegen/ptx", r)
		}
	}()
	Template(Kernel{Name: "k0"})
}
