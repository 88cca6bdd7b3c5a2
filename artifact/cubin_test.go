package artifact_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
)

// Cubins are written beside the module, listed in the plan in architecture order and read back;
// a plan whose cubin entry names another file, an edited cubin and a bad architecture are errors.
func TestCubins(t *testing.T) {
	a := compiled(t)
	a.Cubins = map[string][]byte{"sm_90": []byte("\x7fELF ninety"), "sm_80": []byte("\x7fELF eighty")}
	dir := t.TempDir()
	path := filepath.Join(dir, "lin.ptx")
	if err := a.Write(path); err != nil {
		t.Fatal(err)
	}
	if got := a.Plan.Cubins; len(got) != 2 || got[0].Arch != "sm_80" || got[1].File != "lin.sm_90.cubin" {
		t.Fatalf("plan cubins %+v", got)
	}
	b, err := artifact.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b.Cubins["sm_80"]) != "\x7fELF eighty" || string(b.Cubins["sm_90"]) != "\x7fELF ninety" {
		t.Errorf("cubins read back: %q", b.Cubins)
	}
	planPath := artifact.PlanPath(path)
	plan, _ := os.ReadFile(planPath)
	for _, tc := range []struct{ name, old, new, want string }{
		{"another file", `"file": "lin.sm_80.cubin"`, `"file": "../lin.sm_80.cubin"`, "gcomp keeps it in lin.sm_80.cubin"},
		{"bad arch", `"arch": "sm_80"`, `"arch": "../x"`, "is not a GPU architecture"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(planPath, []byte(strings.Replace(string(plan), tc.old, tc.new, 1)), 0o644)
			if _, err := artifact.Read(path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	os.WriteFile(planPath, plan, 0o644)
	os.WriteFile(filepath.Join(dir, "lin.sm_90.cubin"), []byte("edited"), 0o644)
	if _, err := artifact.Read(path); err == nil || !strings.Contains(err.Error(), "SHA-256 differs") {
		t.Errorf("edited cubin: err = %v", err)
	}
	os.Remove(filepath.Join(dir, "lin.sm_90.cubin"))
	if _, err := artifact.Read(path); err == nil || !strings.Contains(err.Error(), "cannot read the sm_90 cubin") {
		t.Errorf("missing cubin: err = %v", err)
	}
	a.Cubins = map[string][]byte{"sm80": nil}
	if err := a.Write(filepath.Join(dir, "bad.ptx")); err == nil {
		t.Error("a cubin for architecture sm80 was written")
	}
}
