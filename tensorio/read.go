package tensorio

import (
	"fmt"
	"io"
)

// MaxStreamBytes bounds what ReadFile reads from a file that is not a regular file (a pipe, a
// character device such as /dev/zero), whose length cannot be known before reading it.
const MaxStreamBytes = 1 << 30

// ReadFile reads the whole file at path, as os.ReadFile does, but never more than the file holds
// or max bytes: a regular file's size is read first and checked against max before anything is
// allocated; any other file (a pipe, /dev/zero) is read up to max bytes and refused beyond. A
// directory is one clear error. Errors are unprefixed ("PATH: ..."), for the caller to prefix.
func ReadFile(path string, max int64) ([]byte, error) {
	f, st, err := OpenRead(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	switch {
	case st.Mode().IsRegular() && st.Size() > max:
		return nil, fmt.Errorf("%s: the file is %d bytes, more than the limit of %d", path, st.Size(), max)
	case st.Mode().IsRegular():
		data := make([]byte, st.Size())
		if _, err := io.ReadFull(f, data); err != nil {
			return nil, fmt.Errorf("%s: %v (the file shrank while being read?)", path, unwrapPath(err))
		}
		return data, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, unwrapPath(err))
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: not a regular file, and longer than the limit of %d bytes", path, max)
	}
	return data, nil
}
