package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// idxBytes is the IDX encoding of a header and data, uncompressed.
func idxBytes(t ElemType, dims []uint32, data []byte) []byte {
	b := []byte{0, 0, byte(t), byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, data...)
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// sampleArrays has one array of every element type, with values that show the byte order and
// the sign.
func sampleArrays() []*Array {
	be := func(n int, put func(b []byte, i int)) []byte {
		b := make([]byte, n)
		put(b, 0)
		return b
	}
	return []*Array{
		{Type: U8, Dims: []int{2, 3}, Data: []byte{0, 1, 127, 128, 254, 255}},
		{Type: I8, Dims: []int{3}, Data: []byte{0x80, 0xff, 0x7f}},
		{Type: I16, Dims: []int{2}, Data: be(4, func(b []byte, _ int) {
			binary.BigEndian.PutUint16(b, 0x8000)
			binary.BigEndian.PutUint16(b[2:], 0x1234)
		})},
		{Type: I32, Dims: []int{1, 2}, Data: be(8, func(b []byte, _ int) {
			binary.BigEndian.PutUint32(b, 0xfffffffe)
			binary.BigEndian.PutUint32(b[4:], 0x01020304)
		})},
		{Type: F32, Dims: []int{2}, Data: be(8, func(b []byte, _ int) {
			binary.BigEndian.PutUint32(b, math.Float32bits(-1.5))
			binary.BigEndian.PutUint32(b[4:], math.Float32bits(float32(math.Inf(1))))
		})},
		{Type: F64, Dims: []int{1}, Data: be(8, func(b []byte, _ int) {
			binary.BigEndian.PutUint64(b, math.Float64bits(math.Pi))
		})},
		{Type: U8, Dims: []int{}, Data: []byte{7}},
		{Type: F32, Dims: []int{0, 5}, Data: []byte{}},
	}
}

func TestIDXValues(t *testing.T) {
	want := [][]float64{
		{0, 1, 127, 128, 254, 255},
		{-128, -1, 127},
		{-32768, 0x1234},
		{-2, 0x01020304},
		{-1.5, math.Inf(1)},
		{math.Pi},
		{7},
		nil,
	}
	for i, a := range sampleArrays() {
		var got []float64
		for k := range a.Len() {
			got = append(got, a.At(k))
		}
		if diff := cmp.Diff(want[i], got); diff != "" {
			t.Errorf("%s%v values (-want +got):\n%s", a.Type, a.Dims, diff)
		}
	}
}

// Every array survives a write and a read, plain and compressed, in memory and in files.
func TestIDXRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for i, a := range sampleArrays() {
		var buf bytes.Buffer
		if err := WriteIDX(&buf, a); err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]byte{buf.Bytes(), gzipped(buf.Bytes())} {
			got, err := ReadIDX(bytes.NewReader(in))
			if err != nil {
				t.Fatalf("%s%v: %v", a.Type, a.Dims, err)
			}
			if diff := cmp.Diff(a, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		}
		for _, name := range []string{"a.idx", "a.idx.gz"} {
			path := filepath.Join(dir, name)
			if err := WriteIDXFile(path, a); err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(path)
			if compressed := raw[0] == 0x1f; compressed != strings.HasSuffix(name, ".gz") {
				t.Errorf("%s: compressed = %v", name, compressed)
			}
			got, err := ReadIDXFile(path)
			if err != nil {
				t.Fatalf("array %d: %v", i, err)
			}
			if diff := cmp.Diff(a, got); diff != "" {
				t.Errorf("%s round trip (-want +got):\n%s", name, diff)
			}
		}
	}
}

func TestReadIDXErrors(t *testing.T) {
	good := idxBytes(U8, []uint32{2, 2}, []byte{1, 2, 3, 4})
	zgood := gzipped(good)
	badCRC := append([]byte(nil), zgood...)
	badCRC[len(badCRC)-8] ^= 1
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "truncated header: the file ends inside the magic number"},
		{"short magic", []byte{0, 0, 8}, "truncated header: the file ends inside the magic number"},
		{"bad magic", []byte{1, 2, 8, 1, 0, 0, 0, 0}, "not an IDX file: magic number starts 01 02, want 00 00"},
		{"unknown type", idxBytes(0x0a, []uint32{1}, []byte{1}), "unknown element type 0x0a"},
		{"short dims", []byte{0, 0, 8, 2, 0, 0, 0, 1, 0, 0}, "the file ends inside the 2 dimensions"},
		{"short data", idxBytes(U8, []uint32{2, 2}, []byte{1, 2, 3}), "truncated data: u8[2 2] needs 4 bytes, have 3"},
		{"long data", append(good, 9), "data after the array: u8[2 2] needs 4 bytes"},
		{"huge dims", idxBytes(F64, []uint32{1 << 31, 1 << 31}, nil), "need more than 4294967296 bytes"},
		{"huge promise", idxBytes(U8, []uint32{1 << 31}, []byte{1}), "truncated data: u8[2147483648] needs 2147483648 bytes, have 1"},
		{"gzip truncated", zgood[:len(zgood)-6], "gzip: truncated stream: unexpected EOF"},
		{"gzip checksum", badCRC, "data: idx: gzip: invalid checksum"},
		{"gzip short header", []byte{0x1f, 0x8b, 0, 0}, "gzip: truncated stream"},
		{"gzip bad header", []byte{0x1f, 0x8b, 7, 0, 0, 0, 0, 0, 0, 0, 0}, "data: idx: gzip: invalid header"},
		{"gzip trailing garbage", append(append([]byte(nil), zgood...), 'x'), "gzip: "},
		{"gzip short data", gzipped(idxBytes(I16, []uint32{3}, []byte{1, 2, 3})), "truncated data: i16[3] needs 6 bytes, have 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadIDX(bytes.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "data: idx: ") {
				t.Errorf("err = %v, want data: idx: ...%s", err, tc.want)
			}
		})
	}
}

func TestReadIDXFileErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x-idx1-ubyte")
	os.WriteFile(path, []byte{0, 0, 8, 1, 0, 0, 0, 2, 1}, 0o644)
	_, err := ReadIDXFile(path)
	if want := "data: " + path + ": truncated data: u8[2] needs 2 bytes, have 1"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	if _, err := ReadIDXFile(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestWriteIDXErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		a    *Array
		want string
	}{
		{"bad type", &Array{Type: 3, Dims: []int{1}, Data: []byte{1}}, "unknown element type 0x03"},
		{"short data", &Array{Type: I32, Dims: []int{2}, Data: []byte{1, 2, 3, 4}}, "i32[2] needs 8 bytes of data, the array has 4"},
		{"negative dim", &Array{Type: U8, Dims: []int{-1}}, "dimension 0 is -1"},
		{"too many dims", &Array{Type: U8, Dims: make([]int, 256)}, "256 dimensions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := WriteIDX(&bytes.Buffer{}, tc.a); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("WriteIDX: err = %v, want %s", err, tc.want)
			}
			path := filepath.Join(dir, "out.gz")
			if err := WriteIDXFile(path, tc.a); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "data: "+path+": ") {
				t.Errorf("WriteIDXFile: err = %v, want %s", err, tc.want)
			}
			if _, err := os.Stat(path); err == nil {
				t.Errorf("%s written by a failing write", path)
			}
		})
	}
}
