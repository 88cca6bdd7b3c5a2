package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gcomp/gcomp/tensorio"
)

// missingParents returns the directories that must be made, outermost first, for an output
// directory's parent to exist, as mkdir -p would make them. It makes nothing: the caller makes
// them (makeDirs) once the outputs are ready, so a failed command leaves no empty directories.
//
// What is in the way is refused: a part of the path that is a file, and, when directories are
// to be made, any part that is a symbolic link (new directories go only where the path says,
// never where a link points).
func missingParents(dir string) ([]string, error) {
	clean := filepath.Clean(dir)
	var missing []string
	p := clean
	for {
		st, err := os.Lstat(p)
		if err == nil {
			if err := usableDir(dir, clean, p, st); err != nil {
				return nil, err
			}
			break
		}
		// ENOTDIR: a file further up; the walk reaches it and names it.
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return nil, fmt.Errorf("gcomp: cannot write %s: %v", dir, err)
		}
		if p != clean {
			missing = append([]string{p}, missing...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	if len(missing) > 0 {
		// Directories will be made under p: no part of the path above them may be a link.
		for q := p; ; q = filepath.Dir(q) {
			if st, err := os.Lstat(q); err == nil && st.Mode()&fs.ModeSymlink != 0 {
				return nil, fmt.Errorf("gcomp: cannot write %s: %s is a symbolic link; give the path without it to have missing directories made", dir, q)
			}
			if filepath.Dir(q) == q {
				break
			}
		}
	}
	return missing, nil
}

// usableDir checks p, the deepest existing part of the output directory clean (as the user
// wrote it: dir), found by Lstat as st.
func usableDir(dir, clean, p string, st fs.FileInfo) error {
	if st.Mode()&fs.ModeSymlink != 0 {
		// A link that already is the output directory, or its parent, is followed as before.
		target, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("gcomp: cannot write %s: %s is a symbolic link to nothing", dir, p)
		}
		st = target
	}
	switch {
	case st.IsDir():
		return nil
	case p == clean:
		return fmt.Errorf("gcomp: cannot write to %s: it is a file, not a directory", dir)
	}
	return fmt.Errorf("gcomp: cannot write %s: %s is a file, not a directory", dir, p)
}

// makeDirs makes dirs, outermost first; undo removes those it made, innermost first (each only
// if still empty).
func makeDirs(dirs []string) (undo func(), err error) {
	var made []string
	undo = func() {
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i])
		}
	}
	for _, d := range dirs {
		err := os.Mkdir(d, 0o755)
		if err == nil {
			made = append(made, d)
		} else if !errors.Is(err, fs.ErrExist) {
			undo()
			return nil, fmt.Errorf("gcomp: cannot create %s: %v", d, err)
		}
	}
	return undo, nil
}

// tempBeside prepares the new output directory dir to be written whole: it makes dir's missing
// parents (missingParents) and a tracked temporary directory beside dir, to be renamed to dir once
// full. done removes the temporary, if still there, and on failure the parents it made.
func tempBeside(dir string) (tmp string, done func(failed bool), err error) {
	missing, err := missingParents(dir)
	if err != nil {
		return "", nil, err
	}
	undo, err := makeDirs(missing)
	if err != nil {
		return "", nil, err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	tmp, forget, err := tensorio.MkdirTemp(parent, ".gcomp-out-*")
	if err != nil {
		undo()
		return "", nil, fmt.Errorf("gcomp: cannot write to %s: %v", parent, err)
	}
	return tmp, func(failed bool) {
		os.RemoveAll(tmp)
		forget()
		if failed {
			undo()
		}
	}, nil
}
