package data

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// The array names of a .npy directory (NAME.npy) and of an .npz archive (members NAME.npy):
// the training inputs and targets, and optionally the test set's.
const (
	NPYInputs      = "x"
	NPYTargets     = "y"
	NPYTestInputs  = "test_x"
	NPYTestTargets = "test_y"
)

// MaxNPZMember bounds the uncompressed bytes read from one member of an .npz archive (4 GiB).
const MaxNPZMember = 1 << 32

// ReadNPYPair reads a dataset from two .npy files: the inputs, one row per element of the first
// dimension (any dtype and shape), and the targets, as many rows. Both must fit the data memory
// budget, as an .npz archive's arrays do.
func ReadNPYPair(inputs, targets string) (*Tensors, error) {
	left := budget()
	x, err := readNPYTensor(inputs, &left)
	if err != nil {
		return nil, err
	}
	y, err := readNPYTensor(targets, &left)
	if err != nil {
		return nil, err
	}
	return NewTensors(inputs, x, y)
}

func readNPYTensor(path string, left *int64) (*tensor.Tensor, error) {
	f, _, err := tensorio.OpenRead(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	t, err := readBudgeted(bufio.NewReader(f), left)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %v", path, err)
	}
	return t, nil
}

// ReadNPYDir reads the training set from dir/x.npy and dir/y.npy and, when both exist, the test
// set from dir/test_x.npy and dir/test_y.npy (else test is nil).
func ReadNPYDir(dir string) (train, test *Tensors, err error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	} else if !st.IsDir() {
		return nil, nil, fmt.Errorf("data: %s is not a directory (of x.npy and y.npy)", dir)
	}
	npy := func(name string) string { return filepath.Join(dir, name+".npy") }
	if train, err = ReadNPYPair(npy(NPYInputs), npy(NPYTargets)); err != nil {
		return nil, nil, err
	}
	_, errX := os.Stat(npy(NPYTestInputs))
	_, errY := os.Stat(npy(NPYTestTargets))
	switch {
	case errors.Is(errX, fs.ErrNotExist) && errors.Is(errY, fs.ErrNotExist):
		return train, nil, nil
	case errors.Is(errX, fs.ErrNotExist) || errors.Is(errY, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("data: %s: has one of %s.npy and %s.npy, want both or neither", dir, NPYTestInputs, NPYTestTargets)
	}
	if test, err = ReadNPYPair(npy(NPYTestInputs), npy(NPYTestTargets)); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// ReadNPZFile reads an .npz archive (NumPy's savez or savez_compressed: a zip of .npy files)
// holding x and y, and optionally test_x and test_y. The arrays, read and held as the tensors'
// float64 or int64 elements, must fit the data memory budget (SetMemoryBudget): each member's
// declared sizes (the zip's and the array header's) are checked before it is read, its inflated
// bytes as they stream.
func ReadNPZFile(path string) (train, test *Tensors, err error) {
	f, st, err := tensorio.OpenRead(path)
	if err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("data: %s: not a regular file (an .npz archive is read by its end first)", path)
	}
	return ReadNPZ(path, f, st.Size())
}

// ReadNPZ is ReadNPZFile on an archive of size bytes read from r; name is for messages.
func ReadNPZ(name string, r io.ReaderAt, size int64) (train, test *Tensors, err error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, nil, fmt.Errorf("data: %s: %v", name, err)
	}
	return readNPZ(name, z)
}

func readNPZ(path string, z *zip.Reader) (train, test *Tensors, err error) {
	arrays := map[string]*tensor.Tensor{}
	left := budget() // what the members not yet read may still hold
	for _, f := range z.File {
		name := f.Name
		switch name {
		case NPYInputs + ".npy", NPYTargets + ".npy", NPYTestInputs + ".npy", NPYTestTargets + ".npy":
		default:
			return nil, nil, fmt.Errorf("data: %s: member %q is none of x.npy, y.npy, test_x.npy, test_y.npy", path, name)
		}
		if arrays[name] != nil {
			return nil, nil, fmt.Errorf("data: %s: member %s twice", path, name)
		}
		t, err := readNPZMember(f, &left)
		if err != nil {
			return nil, nil, fmt.Errorf("data: %s: %s: %v", path, name, err)
		}
		arrays[name] = t
	}
	pair := func(x, y string) (*Tensors, error) {
		xt, yt := arrays[x+".npy"], arrays[y+".npy"]
		if xt == nil || yt == nil {
			return nil, fmt.Errorf("data: %s: want members %s.npy and %s.npy", path, x, y)
		}
		return NewTensors(path, xt, yt)
	}
	if train, err = pair(NPYInputs, NPYTargets); err != nil {
		return nil, nil, err
	}
	if arrays[NPYTestInputs+".npy"] != nil || arrays[NPYTestTargets+".npy"] != nil {
		if test, err = pair(NPYTestInputs, NPYTestTargets); err != nil {
			return nil, nil, err
		}
		test.Name = path + " (test)"
	}
	return train, test, nil
}

// readNPZMember reads one member within *left bytes (readBudgeted), its declared size checked first.
func readNPZMember(f *zip.File, left *int64) (*tensor.Tensor, error) {
	limit := min(*left, MaxNPZMember)
	if f.UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("declares %d bytes uncompressed, more than %s (%d bytes)", f.UncompressedSize64, npzLimit(*left), limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readBudgeted(rc, left)
}

// readBudgeted reads one .npy stream holding at most *left bytes, first as the raw array, then as
// the tensor's elements (8 bytes each), and takes what the tensor holds from *left.
func readBudgeted(r io.Reader, left *int64) (*tensor.Tensor, error) {
	lr := tensorio.LimitReader(r, min(*left, MaxNPZMember), npzLimit(*left))
	var held int64
	a, err := tensorio.ReadNPYChecked(lr, func(dtype string, shape []int) error {
		n := int64(1)
		for _, d := range shape {
			if d != 0 && n > math.MaxInt64/8/int64(d) {
				return fmt.Errorf("shape %v: more elements than memory holds", shape)
			}
			n *= int64(d)
		}
		size, _ := tensorio.DTypeSize(dtype)
		// The raw bytes and the tensor's elements are held at once while it is converted.
		if held = 8 * n; n*int64(size)+held > *left {
			return fmt.Errorf("%s%v is %d bytes, and %d more as a tensor: more than %s (%d bytes)", dtype, shape, n*int64(size), held, npzLimit(*left), *left)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The whole stream must be the array, and a member's checksum must hold (read to the end).
	if n, err := io.Copy(io.Discard, lr); err != nil {
		return nil, err
	} else if n > 0 {
		return nil, fmt.Errorf("%d bytes after the array", n)
	}
	*left -= held
	return tensor.FromArray(a)
}

// npzLimit names what a member may hold in messages.
func npzLimit(left int64) string {
	if left < MaxNPZMember {
		return "what is left of " + budgetName
	}
	return "MaxNPZMember"
}

// Head returns the first n rows of d (all for n ≤ 0 or n ≥ d.Len()).
func Head(d Dataset, n int) Dataset {
	if n <= 0 || n >= d.Len() {
		return d
	}
	return &head{d, n}
}

type head struct {
	Dataset
	n int
}

func (h *head) Len() int             { return h.n }
func (h *head) String() string       { return fmt.Sprintf("%s[:%d]", Name(h.Dataset), h.n) }
func (h *head) RowName(i int) string { return RowName(h.Dataset, i) }

func (h *head) Targets(rows []int) (*tensor.Tensor, error) { return ReadTargets(h.Dataset, rows) }
