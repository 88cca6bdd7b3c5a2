package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gcomp/gcomp/tensorio"
)

// ElemType is an IDX element type, the third byte of the magic number.
type ElemType byte

// The IDX element types. Multi-byte elements are big-endian.
const (
	U8  ElemType = 0x08 // unsigned byte
	I8  ElemType = 0x09 // signed byte
	I16 ElemType = 0x0B // 2-byte signed integer
	I32 ElemType = 0x0C // 4-byte signed integer
	F32 ElemType = 0x0D // IEEE 754 single
	F64 ElemType = 0x0E // IEEE 754 double
)

// Size is the element's size in bytes, 0 for an unknown type.
func (t ElemType) Size() int {
	switch t {
	case U8, I8:
		return 1
	case I16:
		return 2
	case I32, F32:
		return 4
	case F64:
		return 8
	}
	return 0
}

func (t ElemType) String() string {
	switch t {
	case U8:
		return "u8"
	case I8:
		return "i8"
	case I16:
		return "i16"
	case I32:
		return "i32"
	case F32:
		return "f32"
	case F64:
		return "f64"
	}
	return fmt.Sprintf("ElemType(0x%02x)", byte(t))
}

// MaxIDXBytes bounds the data section a reader accepts (4 GiB); the training set of MNIST
// images is 47 MB.
const MaxIDXBytes = 1 << 32

// Array is one IDX file's content: the element type, the dimensions and the elements in the
// file's byte order (big-endian, row-major).
type Array struct {
	Type ElemType
	Dims []int
	Data []byte
}

// Len is the number of elements, the product of the dimensions.
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Dims {
		n *= d
	}
	return n
}

// At returns element i as a float64, which holds every IDX element type exactly.
func (a *Array) At(i int) float64 {
	b := a.Data[i*a.Type.Size():]
	switch a.Type {
	case U8:
		return float64(b[0])
	case I8:
		return float64(int8(b[0]))
	case I16:
		return float64(int16(binary.BigEndian.Uint16(b)))
	case I32:
		return float64(int32(binary.BigEndian.Uint32(b)))
	case F32:
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b)))
	case F64:
		return math.Float64frombits(binary.BigEndian.Uint64(b))
	}
	panic(fmt.Sprintf("data: At on an array of invalid type %s", a.Type))
}

// dataSize checks the type and dimensions and returns the data section's size in bytes.
func dataSize(t ElemType, dims []int) (int, error) {
	size := t.Size()
	if size == 0 {
		return 0, fmt.Errorf("unknown element type 0x%02x (want 0x08 u8, 0x09 i8, 0x0b i16, 0x0c i32, 0x0d f32 or 0x0e f64)", byte(t))
	}
	if len(dims) > 255 {
		return 0, fmt.Errorf("%d dimensions, at most 255 fit the header", len(dims))
	}
	n := size
	for i, d := range dims {
		if d < 0 || d > math.MaxUint32 {
			return 0, fmt.Errorf("dimension %d is %d, want 0 to %d", i, d, uint32(math.MaxUint32))
		}
		if d != 0 && n > MaxIDXBytes/d {
			return 0, fmt.Errorf("dimensions %v need more than %d bytes of data", dims, MaxIDXBytes)
		}
		n *= d
	}
	return n, nil
}

// ReadIDX reads one IDX array from r, which may be gzip-compressed (recognized by its magic
// bytes). It reads r to its end: data after the array is an error.
func ReadIDX(r io.Reader) (*Array, error) {
	a, err := readIDX(r, 0)
	if err != nil {
		return nil, fmt.Errorf("data: idx: %w", err)
	}
	return a, nil
}

// ReadIDXFile reads the IDX file at path, gzip-compressed or not, whatever its name.
func ReadIDXFile(path string) (*Array, error) { return ReadIDXFileLimit(path, 0) }

// ReadIDXFileLimit reads the IDX file at path keeping only its first limit items (entries of the
// first dimension; all of them for 0): the rest of the data is read and its length checked, but
// never held in memory, so a header claiming millions of images costs the memory of limit.
func ReadIDXFileLimit(path string, limit int) (*Array, error) {
	f, _, err := tensorio.OpenRead(path) // a FIFO without a writer is refused, not waited on forever
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	a, err := readIDX(f, limit)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", path, err)
	}
	return a, nil
}

func readIDX(r io.Reader, limit int) (*Array, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, readErr(err)
		}
		return readRawIDX(zr, limit)
	}
	return readRawIDX(br, limit)
}

// readRawIDX reads an uncompressed IDX stream, keeping the first limit items (all for 0). Sizes
// are checked before anything large is allocated: the data is read in growing pieces, so a header
// that promises more than the stream holds (a small gzip stream inflating to gigabytes included)
// costs no more memory than the data kept.
func readRawIDX(r io.Reader, limit int) (*Array, error) {
	var hdr [4]byte
	if err := readFull(r, hdr[:], "magic number"); err != nil {
		return nil, err
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return nil, fmt.Errorf("not an IDX file: magic number starts % x, want 00 00", hdr[:2])
	}
	t := ElemType(hdr[2])
	nd := int(hdr[3])
	dimBytes := make([]byte, 4*nd)
	if err := readFull(r, dimBytes, fmt.Sprintf("%d dimensions", nd)); err != nil {
		return nil, err
	}
	dims := make([]int, nd)
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(dimBytes[4*i:]))
	}
	n, err := dataSize(t, dims)
	if err != nil {
		return nil, err
	}
	keep, limited := n, limit > 0 && len(dims) > 0 && dims[0] > limit
	if limited {
		keep = n / dims[0] * limit
	}
	var buf bytes.Buffer
	buf.Grow(min(keep, 1<<20))
	got, err := io.Copy(&buf, io.LimitReader(r, int64(keep)))
	if err != nil {
		return nil, readErr(err)
	}
	// The items not kept are counted, not held.
	skipped, err := io.Copy(io.Discard, io.LimitReader(r, int64(n-keep)+1))
	if err != nil {
		return nil, readErr(err)
	}
	got += skipped
	if got < int64(n) {
		return nil, fmt.Errorf("truncated data: %s%v needs %d bytes, have %d", t, dims, n, got)
	}
	if got > int64(n) {
		return nil, fmt.Errorf("data after the array: %s%v needs %d bytes, the file has more", t, dims, n)
	}
	if limited {
		dims = append([]int{limit}, dims[1:]...)
	}
	return &Array{Type: t, Dims: dims, Data: buf.Bytes()}, nil
}

func readFull(r io.Reader, b []byte, what string) error {
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("truncated header: the file ends inside the %s", what)
		}
		return readErr(err)
	}
	return nil
}

// readErr names an error of the gzip layer as such (gzip's own errors say so already).
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("gzip: truncated stream: %v", err)
	}
	return err
}

// WriteIDX writes a to w in IDX format, uncompressed.
func WriteIDX(w io.Writer, a *Array) error {
	if err := writeIDX(w, a); err != nil {
		return fmt.Errorf("data: idx: %w", err)
	}
	return nil
}

// WriteIDXFile writes a to path atomically, gzip-compressed when the name ends in .gz. The
// output is deterministic (the gzip header carries no name or time).
func WriteIDXFile(path string, a *Array) error {
	err := tensorio.WriteFileAtomic(path, func(w io.Writer) error {
		if !strings.HasSuffix(path, ".gz") {
			return writeIDX(w, a)
		}
		zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
		if err != nil {
			return err
		}
		if err := writeIDX(zw, a); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // drop tensorio's prefix for ours
		}
		return fmt.Errorf("data: %s: %w", path, err)
	}
	return nil
}

func writeIDX(w io.Writer, a *Array) error {
	n, err := dataSize(a.Type, a.Dims)
	if err != nil {
		return err
	}
	if len(a.Data) != n {
		return fmt.Errorf("%s%v needs %d bytes of data, the array has %d", a.Type, a.Dims, n, len(a.Data))
	}
	hdr := []byte{0, 0, byte(a.Type), byte(len(a.Dims))}
	for _, d := range a.Dims {
		hdr = binary.BigEndian.AppendUint32(hdr, uint32(d))
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err = w.Write(a.Data)
	return err
}
