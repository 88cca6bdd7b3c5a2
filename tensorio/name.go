package tensorio

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckFileName reports whether name, read from a file (a launch plan's output names, a
// safetensors key, a model's value names), may become one file name inside a directory the user
// chose: it must be non-empty valid UTF-8 with no path separator, no control character, and not
// "." or "..". Every place a name read from a file becomes a path calls this first, so that a
// hand-edited file can never make a command write outside its output directory.
func CheckFileName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("an empty name cannot name a file")
	case name == "." || name == "..":
		return fmt.Errorf("name %q cannot name a file", name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("name %q cannot name a file: it holds a path separator", name)
	case !utf8.ValidString(name):
		return fmt.Errorf("name %q cannot name a file: it is not valid UTF-8", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("name %q cannot name a file: it holds a control character", name)
		}
	}
	return nil
}
