package tensorio

import (
	"fmt"
	"io"
	"os"
	"slices"
)

// SafetensorsFile is a safetensors file opened for reading tensors on request, for files too large
// to hold twice (a language model's checkpoint). Its header is validated completely when it is
// opened; a tensor's bytes are read only when View asks for them. Where the system maps files
// (Linux, macOS, the BSDs) the file is mapped read-only and a view is a slice of the mapping;
// elsewhere View reads the tensor's span.
type SafetensorsFile struct {
	path     string
	metadata map[string]string
	tensors  map[string]stTensor
	names    []string
	dataAt   int64 // file offset of the data section
	f        *os.File
	mapped   []byte // the whole file, when mapped
}

// useMap is false in tests that run the read fallback of systems without mmap.
var useMap = true

// OpenSafetensorsFile opens the safetensors file at path. Only a regular file is accepted (a pipe
// or device cannot be mapped nor read at an offset); its header length is checked against the
// file's real length before anything is allocated. Errors are prefixed "tensorio: PATH: ".
func OpenSafetensorsFile(path string) (*SafetensorsFile, error) {
	s, err := openSafetensorsFile(path)
	if err != nil {
		return nil, fmt.Errorf("tensorio: %w", err)
	}
	return s, nil
}

func openSafetensorsFile(path string) (*SafetensorsFile, error) {
	f, st, err := OpenRead(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, st.Mode().Type())
	}
	s := &SafetensorsFile{path: path, f: f}
	if err := s.open(st.Size()); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func (s *SafetensorsFile) open(size int64) error {
	var prefix [8]byte
	if size >= 8 {
		if _, err := s.f.ReadAt(prefix[:], 0); err != nil {
			return fmt.Errorf("reading the header length: %v", unwrapPath(err))
		}
	}
	hlen, err := stHeaderLen(prefix[:], size)
	if err != nil {
		return err
	}
	if useMap {
		if s.mapped, err = mapFile(s.f, size); err != nil {
			return err
		}
	}
	var head []byte
	if s.mapped != nil {
		head = s.mapped[8 : 8+hlen]
	} else {
		head = make([]byte, hlen)
		if _, err := s.f.ReadAt(head, 8); err != nil {
			return fmt.Errorf("reading the header: %v", unwrapPath(err))
		}
	}
	s.dataAt = 8 + hlen
	entries, meta, err := parseSTHeader(head, size-s.dataAt)
	if err != nil {
		return err
	}
	s.metadata = meta
	s.tensors = make(map[string]stTensor, len(entries))
	for _, e := range entries {
		s.tensors[e.Name] = e
		s.names = append(s.names, e.Name)
	}
	slices.Sort(s.names)
	return nil
}

// Path is the file's path as it was opened.
func (s *SafetensorsFile) Path() string { return s.path }

// Metadata is the header's __metadata__ (nil when absent).
func (s *SafetensorsFile) Metadata() map[string]string { return s.metadata }

// Names lists the file's tensors, sorted.
func (s *SafetensorsFile) Names() []string { return s.names }

// Info returns a tensor's dtype and shape without reading its data.
func (s *SafetensorsFile) Info(name string) (dtype string, shape []int, ok bool) {
	e, ok := s.tensors[name]
	if !ok {
		return "", nil, false
	}
	return e.Array.DType, slices.Clone(e.Array.Shape), true
}

// View returns a tensor. Where the file is mapped, its Data is a slice of the read-only mapping:
// it must not be written, and it is valid only until Close (a caller converts or copies it).
// Elsewhere Data is read from the file into a new buffer.
func (s *SafetensorsFile) View(name string) (*Array, error) {
	e, ok := s.tensors[name]
	if !ok {
		return nil, fmt.Errorf("tensorio: %s: no tensor %q", s.path, name)
	}
	if s.f == nil {
		return nil, fmt.Errorf("tensorio: %s: file is closed", s.path)
	}
	a := &Array{DType: e.Array.DType, Shape: slices.Clone(e.Array.Shape)}
	begin, end := s.dataAt+e.Begin, s.dataAt+e.End
	if s.mapped != nil {
		a.Data = s.mapped[begin:end:end]
		return a, nil
	}
	a.Data = make([]byte, end-begin)
	if _, err := s.f.ReadAt(a.Data, begin); err != nil && !(err == io.EOF && end == begin) {
		return nil, fmt.Errorf("tensorio: %s: tensor %q: %v (the file shrank?)", s.path, name, unwrapPath(err))
	}
	return a, nil
}

// Close unmaps and closes the file. Views of the mapping must not be used after it.
func (s *SafetensorsFile) Close() error {
	var err error
	if s.mapped != nil {
		err = unmapFile(s.mapped)
		s.mapped = nil
	}
	if s.f != nil {
		if cerr := s.f.Close(); err == nil {
			err = cerr
		}
		s.f = nil
	}
	return err
}
