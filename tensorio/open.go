package tensorio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// One rule for every path gcomp reads: OpenRead opens without blocking on a named pipe (opening a
// FIFO for reading waits for a writer, which may never come) and reports what the path is before
// anything is read, so a caller checks a regular file's size against its budget before it
// allocates, and reads anything else (a pipe, /dev/zero) through a LimitedReader.

// OpenRead opens path for reading. A named pipe is opened without waiting for a writer: a pipe
// nobody writes reads as empty instead of blocking forever. A directory is refused. Errors are
// unprefixed ("PATH: ..."), for the caller to prefix.
func OpenRead(path string) (*os.File, fs.FileInfo, error) {
	f, err := openNoBlock(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: no such file", path)
		}
		return nil, nil, fmt.Errorf("%s: %v", path, unwrapPath(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %v", path, unwrapPath(err))
	}
	if st.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: is a directory", path)
	}
	return f, st, nil
}

// LimitReader returns a reader of r that fails, instead of ending, once more than max bytes have
// been read: a stream that is longer than the budget is an error, never a truncated success.
// what names the budget in the error ("the 1 GiB input limit").
func LimitReader(r io.Reader, max int64, what string) io.Reader {
	return &limitReader{r: r, left: max, max: max, what: what}
}

type limitReader struct {
	r    io.Reader
	left int64
	max  int64
	what string
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, l.err()
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n - int(-l.left), l.err()
	}
	return n, err
}

func (l *limitReader) err() error {
	if l.what != "" {
		return fmt.Errorf("longer than %s (%d bytes)", l.what, l.max)
	}
	return fmt.Errorf("longer than the limit of %d bytes", l.max)
}

// Inside resolves name, read from a file and so untrusted, as a path inside the folder root: an
// absolute name, a name with ".." that leaves root, and a name whose symbolic links resolve to a
// place outside root are refused. It returns the resolved path. The file need not be regular (the
// caller's OpenRead says what it is), but it must exist.
func Inside(root, name string) (string, error) {
	if name == "" {
		return "", errors.New("empty file name")
	}
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("file name %q holds a NUL byte", name)
	}
	if filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) || filepath.VolumeName(name) != "" {
		return "", fmt.Errorf("file name %q is absolute; it must be relative to %s", name, root)
	}
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("file name %q leaves the folder %s", name, root)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("%s: %v", root, unwrapPath(err))
	}
	realRoot, err = filepath.Abs(realRoot)
	if err != nil {
		return "", err
	}
	target, err := filepath.EvalSymlinks(filepath.Join(root, name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: no such file", filepath.Join(root, name))
		}
		return "", fmt.Errorf("%s: %v", filepath.Join(root, name), unwrapPath(err))
	}
	target, err = filepath.Abs(target)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(realRoot, target)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("file name %q resolves (through a symbolic link) to %s, outside the folder %s", name, target, root)
	}
	return target, nil
}
