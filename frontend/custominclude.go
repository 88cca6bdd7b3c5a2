package frontend

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensorio"
)

// A custom kernel's #include is resolved here, inside the model's folder, and its text inlined
// between #line directives, so NVRTC never reads a file: the kernel builds the same wherever gcomp
// runs, a .gir carries the whole source, and the op's hash covers the headers too.

// maxIncludeDepth bounds nested includes (a header that includes itself without a guard).
const maxIncludeDepth = 32

// inliner inlines the headers of one kernel source.
type inliner struct {
	root string          // the model's folder
	left int64           // bytes the source may still grow by
	once map[string]bool // resolved paths of the #pragma once headers already inlined
}

// inlineIncludes returns src, named file (relative to the model's folder dir), with every
// #include replaced by the text of the header it names, read from dir: a name is looked up beside
// the file that includes it, then in dir, and never outside dir.
func inlineIncludes(dir, src, file string) (string, error) {
	in := &inliner{root: dir, left: maxSourceBytes - int64(len(src)), once: map[string]bool{}}
	return in.expand(src, file, 0)
}

func (in *inliner) expand(src, file string, depth int) (string, error) {
	ds := ops.Directives(src)
	var incs []ops.Directive
	for _, d := range ds {
		if d.ReadsFile() {
			incs = append(incs, d)
		}
	}
	if len(incs) == 0 {
		return src, nil
	}
	if depth >= maxIncludeDepth {
		return "", fmt.Errorf("%s:%d: #include nested deeper than %d (a header that includes itself?)", file, incs[0].Line, maxIncludeDepth)
	}
	lines := strings.SplitAfter(src, "\n")
	var b strings.Builder
	next := 0 // the first line (0-based) not yet written
	for _, d := range incs {
		at := fmt.Sprintf("%s:%d", file, d.Line)
		name, _, ok := d.Include()
		if d.Keyword != "include" || !ok {
			return "", fmt.Errorf("%s: #%s %s: gcomp inlines only #include \"name\" and #include <name> of a file in the model's folder", at, d.Keyword, d.Rest)
		}
		rel, real, err := in.resolve(file, name)
		if err != nil {
			return "", fmt.Errorf("%s: #include %s: %v", at, d.Rest, err)
		}
		text := ""
		if !in.once[real] {
			if text, err = in.read(real, rel); err != nil {
				return "", fmt.Errorf("%s: #include %s: %v", at, d.Rest, err)
			}
			if pragmaOnce(text) {
				in.once[real] = true
			}
			if text, err = in.expand(text, rel, depth+1); err != nil {
				return "", err
			}
		}
		for ; next < d.Line-1; next++ {
			b.WriteString(lines[next])
		}
		next = d.EndLine
		if text != "" {
			fmt.Fprintf(&b, "#line 1 %q\n%s", rel, text)
			if !strings.HasSuffix(text, "\n") {
				b.WriteString("\n")
			}
		}
		fmt.Fprintf(&b, "#line %d %q\n", d.EndLine+1, file)
	}
	for ; next < len(lines); next++ {
		b.WriteString(lines[next])
	}
	return b.String(), nil
}

// resolve finds the header name included from file: beside file, then at the model's folder. It
// returns the header's path relative to the folder and its resolved path.
func (in *inliner) resolve(file, name string) (rel, real string, err error) {
	if name == "" || strings.ContainsAny(name, "\\\"\x00") || path.IsAbs(name) || filepath.IsAbs(name) {
		return "", "", fmt.Errorf("%q is not a relative name of a file in the model's folder", name)
	}
	var first error
	for _, c := range []string{path.Join(path.Dir(file), name), path.Clean(name)} {
		if !filepath.IsLocal(filepath.FromSlash(c)) {
			err = fmt.Errorf("%q is outside the model's folder", name)
		} else if real, err = tensorio.Inside(in.root, filepath.FromSlash(c)); err == nil {
			return c, real, nil
		}
		if first == nil {
			first = err
		}
		if !strings.HasSuffix(err.Error(), "no such file") {
			return "", "", err
		}
	}
	return "", "", fmt.Errorf("no such file in the model's folder (looked beside %s and in the folder): %v", file, first)
}

// read reads a header, a regular file, within what is left of the source's budget.
func (in *inliner) read(real, rel string) (string, error) {
	f, st, err := openSource(real, rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st.Size() > in.left {
		return "", fmt.Errorf("%s: with its headers, the source is larger than %d bytes", rel, maxSourceBytes)
	}
	data, err := io.ReadAll(tensorio.LimitReader(f, in.left, "the kernel source limit"))
	if err != nil {
		return "", fmt.Errorf("%s: %v", rel, err)
	}
	in.left -= int64(len(data))
	return string(data), nil
}

// openSource opens a source file, refusing one that is not a regular file (named what in the
// error) before opening it: tensorio.OpenRead would wait for a pipe's writer.
func openSource(path, what string) (*os.File, fs.FileInfo, error) {
	if st, err := os.Stat(path); err == nil {
		if err := regular(what, st); err != nil {
			return nil, nil, err
		}
	}
	f, st, err := tensorio.OpenRead(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", what, err)
	}
	if err := regular(what, st); err != nil { // replaced since the Stat
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// regular refuses a source file that is not a regular file: a named pipe may never end.
func regular(name string, st fs.FileInfo) error {
	m := st.Mode()
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeNamedPipe != 0:
		return fmt.Errorf("%s is a named pipe, not a regular file", name)
	case m&fs.ModeDevice != 0:
		return fmt.Errorf("%s is a device, not a regular file", name)
	}
	return fmt.Errorf("%s is not a regular file (%v)", name, m.Type())
}

// pragmaOnce reports whether a header says #pragma once.
func pragmaOnce(src string) bool {
	for _, d := range ops.Directives(src) {
		if d.Keyword == "pragma" && d.Rest == "once" {
			return true
		}
	}
	return false
}
