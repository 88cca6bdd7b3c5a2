package tensorio

import (
	"strings"
	"testing"
)

func TestCheckFileName(t *testing.T) {
	tests := []struct {
		name string
		want string // "" for a good name, else a substring of the error
	}{
		{"y", ""},
		{"0.weight", ""},
		{"a..b", ""},
		{"logits_ü", ""},
		{"", "empty name"},
		{".", `name "." cannot`},
		{"..", `name ".." cannot`},
		{"../../x", "path separator"},
		{"a/b", "path separator"},
		{"/etc/passwd", "path separator"},
		{`..\x`, "path separator"},
		{"a\nb", "control character"},
		{"a\x1b[31mb", "control character"},
		{"a\x7fb", "control character"},
		{"a\u0085b", "control character"},
		{"a\xffb", "not valid UTF-8"},
	}
	for _, tc := range tests {
		err := CheckFileName(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckFileName(%q) = %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckFileName(%q) = %v, want an error with %q", tc.name, err, tc.want)
		case err != nil && strings.ContainsAny(err.Error(), "\n\x1b"):
			t.Errorf("CheckFileName(%q): the error prints the raw name: %q", tc.name, err)
		}
	}
}
