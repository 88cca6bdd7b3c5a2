package tensorio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes path through write. A regular file (or nothing) at path is replaced
// atomically: the bytes go to a temporary file in the same directory, which is renamed over path
// only when write succeeded; on failure the temporary file is removed and path is untouched. A
// symbolic link is followed: its target is replaced, the link stays. A character device or a
// named pipe (-o /dev/null, -o /dev/stdout) is written directly, never replaced. Anything else (a
// directory, a socket, a block device) is refused. Errors carry the "tensorio: PATH: " prefix.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	return WriteFilesAtomic(FileWrite{path, write})
}

// A FileWrite is one file of a command's outputs: its path and what writes its bytes.
type FileWrite struct {
	Path  string
	Write func(io.Writer) error
}

// WriteFilesAtomic writes a command's outputs together, each as WriteFileAtomic would: every
// destination is resolved first (a bad one fails before anything is written), every regular file
// is written to its temporary file, and only when all writes succeeded are the temporaries renamed
// into place, so a failure leaves every file as it was. (Devices and pipes are written directly,
// after the temporaries and before the renames; they cannot be taken back.)
func WriteFilesAtomic(files ...FileWrite) (err error) {
	type job struct {
		FileWrite
		dst    Dest
		tmp    string
		forget func() // stops tracking tmp as a temporary
	}
	jobs := make([]job, len(files))
	for i, f := range files {
		dst, err := Destination(f.Path)
		if err != nil {
			return fmt.Errorf("tensorio: %s: %w", f.Path, err)
		}
		jobs[i] = job{FileWrite: f, dst: dst}
	}
	defer func() {
		for _, j := range jobs {
			if j.tmp != "" {
				os.Remove(j.tmp)
			}
			if j.forget != nil {
				j.forget()
			}
		}
	}()
	for i, j := range jobs {
		if !j.dst.Direct {
			if jobs[i].tmp, jobs[i].forget, err = writeTemp(j.dst, j.Write); err != nil {
				return fmt.Errorf("tensorio: %s: %w", j.Path, err)
			}
		}
	}
	for _, j := range jobs {
		if j.dst.Direct {
			if err := writeDirect(j.Path, j.Write); err != nil {
				return fmt.Errorf("tensorio: %s: %w", j.Path, err)
			}
		}
	}
	for i, j := range jobs {
		if j.tmp != "" {
			if err := os.Rename(j.tmp, j.dst.Path); err != nil {
				return fmt.Errorf("tensorio: %s: %w", j.Path, err)
			}
			jobs[i].tmp = ""
		}
	}
	return nil
}

// A Dest is where WriteFileAtomic puts a path's bytes.
type Dest struct {
	Path   string      // the file a rename replaces: path with its symbolic links resolved
	Mode   fs.FileMode // the permissions the file keeps (0644 for a new file)
	Direct bool        // a character device or named pipe: written in place, never renamed over
}

// Destination resolves where a write to path goes, and refuses what must not be replaced: a
// directory, a socket, a block device. Commands call it for every output before any work, so a
// bad destination fails at once.
func Destination(path string) (Dest, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Nothing there, or a symbolic link to nothing: the file is created at the link's target.
		target, err := linkTarget(path)
		return Dest{Path: target, Mode: 0o644}, err
	case err != nil:
		return Dest{}, unwrapPath(err)
	case st.Mode().IsRegular():
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return Dest{}, unwrapPath(err)
		}
		return Dest{Path: target, Mode: st.Mode().Perm()}, nil
	case st.IsDir():
		return Dest{}, errors.New("is a directory")
	case st.Mode()&fs.ModeCharDevice != 0 || st.Mode()&fs.ModeNamedPipe != 0:
		return Dest{Path: path, Direct: true}, nil
	default:
		return Dest{}, fmt.Errorf("is not a regular file, a character device or a pipe (mode %s): refusing to replace it", st.Mode().Type())
	}
}

// linkTarget follows the chain of symbolic links at path to its end, which does not exist.
func linkTarget(path string) (string, error) {
	for range 40 {
		st, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && st.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		if err != nil {
			return "", unwrapPath(err)
		}
		t, err := os.Readlink(path)
		if err != nil {
			return "", unwrapPath(err)
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(path), t)
		}
		path = t
	}
	return "", errors.New("too many levels of symbolic links")
}

// unwrapPath drops the path an *fs.PathError repeats, since the caller's prefix names it.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func writeDirect(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return unwrapPath(err)
	}
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return unwrapPath(err)
	}
	return unwrapPath(f.Close())
}

// writeTemp writes a temporary file beside dst and returns its name and the function that stops
// tracking it (TrackTemporary) once it is renamed or removed.
func writeTemp(dst Dest, write func(io.Writer) error) (tmp string, forget func(), err error) {
	f, untrack, err := CreateTemp(filepath.Dir(dst.Path), "."+filepath.Base(dst.Path)+".tmp*")
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			untrack()
		}
	}()
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return "", nil, err
	}
	if err := bw.Flush(); err != nil {
		return "", nil, err
	}
	if err := f.Chmod(dst.Mode); err != nil {
		return "", nil, err
	}
	return f.Name(), untrack, f.Close()
}
