package backend

import (
	"strings"
	"testing"

	_ "github.com/gcomp/gcomp/internal/golden"
)

func TestNew(t *testing.T) {
	for _, tc := range []struct{ name, want, err string }{
		{"", "ptx", ""},
		{"ptx", "ptx", ""},
		{"nvvm", "nvvm", ""},
		{"auto", "auto", ""},
		{"llvm", "", `unknown backend "llvm" (want ptx, nvvm or auto)`},
	} {
		p, err := New(tc.name, "")
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("New(%q): err = %v, want %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("New(%q): %v", tc.name, err)
		case p.Name() != tc.want:
			t.Errorf("New(%q).Name() = %q, want %q", tc.name, p.Name(), tc.want)
		}
	}
}
