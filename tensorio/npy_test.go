package tensorio

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var equateEmpty = cmpopts.EquateEmpty()

// randomArray returns an array of dtype and shape with random contents
// (0 or 1 for bool).
func randomArray(rng *rand.Rand, dtype string, shape []int) *Array {
	size, _ := DTypeSize(dtype)
	n, _ := byteSize(shape, size)
	data := make([]byte, n)
	rng.Read(data)
	if dtype == "bool" {
		for i := range data {
			data[i] &= 1
		}
	}
	return &Array{DType: dtype, Shape: shape, Data: data}
}

var testShapes = [][]int{{}, {0}, {3}, {2, 3}, {2, 0, 4}, {1, 2, 3, 2}}

func TestNPYRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, d := range dtypes {
		if d.npy == "" {
			continue
		}
		for _, shape := range testShapes {
			a := randomArray(rng, d.name, shape)
			var buf bytes.Buffer
			if err := WriteNPY(&buf, a); err != nil {
				t.Fatalf("WriteNPY(%s%v): %v", d.name, shape, err)
			}
			if buf.Len()-len(a.Data) != 128 && buf.Len()-len(a.Data) != 64 {
				t.Errorf("%s%v: header of %d bytes is not 64-byte aligned", d.name, shape, buf.Len()-len(a.Data))
			}
			got, err := ReadNPY(&buf)
			if err != nil {
				t.Fatalf("ReadNPY(%s%v): %v", d.name, shape, err)
			}
			if diff := cmp.Diff(a, got, equateEmpty); diff != "" {
				t.Errorf("%s%v round trip (-want +got):\n%s", d.name, shape, diff)
			}
		}
	}
}

type fixture struct {
	name string
	want *Array
}

// readManifest parses testdata/manifest.txt, written by testdata/gen.py.
func readManifest(t *testing.T) []fixture {
	t.Helper()
	text, err := os.ReadFile("testdata/manifest.txt")
	if err != nil {
		t.Fatal(err)
	}
	var fs []fixture
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 { // an empty array has no hex field
			f = append(f, "")
		}
		a := &Array{DType: f[1], Shape: []int{}}
		if f[2] != "-" {
			for _, s := range strings.Split(f[2], ",") {
				n, err := strconv.Atoi(s)
				if err != nil {
					t.Fatalf("manifest line %q: %v", line, err)
				}
				a.Shape = append(a.Shape, n)
			}
		}
		if a.Data, err = hex.DecodeString(f[3]); err != nil {
			t.Fatalf("manifest line %q: %v", line, err)
		}
		fs = append(fs, fixture{f[0], a})
	}
	return fs
}

// TestNumPyFixtures reads files written by NumPy, and checks that our writer
// reproduces NumPy's bytes exactly for the little-endian C-order ones.
func TestNumPyFixtures(t *testing.T) {
	fs := readManifest(t)
	if len(fs) < 15 {
		t.Fatalf("manifest has only %d fixtures", len(fs))
	}
	for _, f := range fs {
		path := filepath.Join("testdata", f.name+".npy")
		got, err := ReadNPYFile(path)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if diff := cmp.Diff(f.want, got, equateEmpty); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
		if strings.Contains(f.name, "_be_") || strings.Contains(f.name, "fortran") || strings.Contains(f.name, "_v") {
			continue
		}
		raw, _ := os.ReadFile(path)
		var buf bytes.Buffer
		if err := WriteNPY(&buf, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), raw) {
			t.Errorf("%s: WriteNPY differs from NumPy's output:\n got %q\nwant %q", path, buf.Bytes(), raw)
		}
	}
}

func TestNPYFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.npy")
	a := &Array{DType: "i32", Shape: []int{2}, Data: []byte{1, 0, 0, 0, 2, 0, 0, 0}}
	if err := WriteNPYFile(path, a); err != nil {
		t.Fatal(err)
	}
	got, err := ReadNPYFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A failed write leaves the old file and no temporary file.
	bad := &Array{DType: "bf16", Shape: []int{1}, Data: []byte{0, 0}}
	err = WriteNPYFile(path, bad)
	if err == nil || !strings.Contains(err.Error(), "tensorio: "+path+": dtype bf16 has no NumPy equivalent") {
		t.Errorf("WriteNPYFile(bf16) = %v", err)
	}
	assertDir(t, dir, "x.npy")
	if got, err := ReadNPYFile(path); err != nil || !bytes.Equal(got.Data, a.Data) {
		t.Errorf("after failed write: %v, %v", got, err)
	}

	// Errors name the file.
	os.WriteFile(path, []byte(npyHeaderFor("<f4", "(784,)")+strings.Repeat("x", 100)), 0o644)
	_, err = ReadNPYFile(path)
	if want := "tensorio: " + path + ": truncated data: want 3136 bytes, have 100"; err == nil || err.Error() != want {
		t.Errorf("ReadNPYFile(truncated) = %v, want %s", err, want)
	}
	if err := WriteNPYFile(filepath.Join(dir, "no", "such.npy"), a); err == nil {
		t.Error("WriteNPYFile into a missing directory succeeded")
	}
}

// assertDir checks that dir holds exactly the named files.
func assertDir(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff(names, got, equateEmpty); diff != "" {
		t.Errorf("files in %s (-want +got):\n%s", dir, diff)
	}
}

// npyHeaderFor builds a version 1.0 preamble and header for descr and shape.
func npyHeaderFor(descr, shape string) string {
	return npyRaw(1, "{'descr': '"+descr+"', 'fortran_order': False, 'shape': "+shape+", }")
}

func npyRaw(major byte, dict string) string {
	dict += "\n"
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.WriteByte(major)
	b.WriteByte(0)
	n := len(dict)
	b.WriteByte(byte(n))
	b.WriteByte(byte(n >> 8))
	if major > 1 {
		b.WriteByte(byte(n >> 16))
		b.WriteByte(byte(n >> 24))
	}
	b.WriteString(dict)
	return b.String()
}

func TestNPYErrors(t *testing.T) {
	f4x2 := npyHeaderFor("<f4", "(2,)")
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "truncated header: want 8 bytes of preamble, have 0"},
		{"bad magic", "\x93NUMPZ\x01\x00\x10\x00", `bad magic "\x93NUMPZ"`},
		{"version", npyMagic + "\x04\x00\x10\x00", "unsupported format version 4.0"},
		{"no length", npyMagic + "\x01\x00\x10", "truncated header: want 2 bytes of header length, have 1"},
		{"short header", npyMagic + "\x01\x00\x10\x00{'descr'", "truncated header: want 16 bytes, have 8"},
		{"huge header", npyMagic + "\x02\x00\xff\xff\xff\xff", "header length 4294967295 exceeds the limit"},
		{"truncated data", f4x2 + "\x00\x00\x80", "truncated data: want 8 bytes, have 3"},
		{"not a dict", npyRaw(1, "[1, 2]"), "want '{'"},
		{"complex", npyHeaderFor("<c8", "(2,)"), `unsupported dtype "<c8"`},
		{"structured", npyRaw(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }"), "descr: want a quoted string"},
		{"byte order", npyHeaderFor("!f4", "(2,)"), `unsupported byte order in dtype "!f4"`},
		{"missing shape", npyRaw(1, "{'descr': '<f4', 'fortran_order': False}"), `missing key "shape"`},
		{"extra key", npyRaw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}"), `unexpected key "x"`},
		{"duplicate key", npyRaw(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}"), `duplicate key "descr"`},
		{"fortran value", npyRaw(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': ()}"), "fortran_order: want True or False"},
		{"negative dim", npyHeaderFor("<f4", "(-1,)"), "shape: want a non-negative integer"},
		{"bad tuple", npyHeaderFor("<f4", "(2 3)"), "shape: want ',' or ')'"},
		{"unterminated", npyRaw(1, "{'descr: "), "unterminated string"},
		{"trailing", npyRaw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()} x"), "trailing characters"},
		{"overflow", npyHeaderFor("<f8", "(4611686018427387904, 4)"), "too large"},
		{"huge", npyHeaderFor("<f8", "(1000000000000,)") + "abc", "truncated data: want 8000000000000 bytes, have 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadNPY(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "tensorio: npy: ") {
				t.Errorf("ReadNPY = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestWriteNPYErrors(t *testing.T) {
	tests := []struct {
		a    *Array
		want string
	}{
		{nil, "nil array"},
		{&Array{DType: "c64"}, `unknown dtype "c64"`},
		{&Array{DType: "bf16", Data: []byte{0, 0}}, "dtype bf16 has no NumPy equivalent"},
		{&Array{DType: "f32", Shape: []int{2}, Data: []byte{0, 0}}, "f32[2] needs 8 data bytes, have 2"},
		{&Array{DType: "f32", Shape: []int{-2}}, "negative dimension"},
	}
	for _, tt := range tests {
		err := WriteNPY(&bytes.Buffer{}, tt.a)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("WriteNPY(%v) = %v, want %q", tt.a, err, tt.want)
		}
	}
}

// TestNPYStream checks that ReadNPY consumes exactly one array, so several
// can be read from one stream.
func TestNPYStream(t *testing.T) {
	var buf bytes.Buffer
	a := &Array{DType: "u8", Shape: []int{3}, Data: []byte{1, 2, 3}}
	b := &Array{DType: "i8", Shape: []int{}, Data: []byte{0xff}}
	WriteNPY(&buf, a)
	WriteNPY(&buf, b)
	r := bufio.NewReader(&buf)
	for _, want := range []*Array{a, b} {
		got, err := ReadNPY(r)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}

func TestFortranToC(t *testing.T) {
	// A 2x3 matrix [[0 1 2] [3 4 5]] stored column-major is 0 3 1 4 2 5.
	got := fortranToC([]byte{0, 3, 1, 4, 2, 5}, []int{2, 3}, 1)
	if want := []byte{0, 1, 2, 3, 4, 5}; !bytes.Equal(got, want) {
		t.Errorf("fortranToC = %v, want %v", got, want)
	}
}

func TestDTypeSize(t *testing.T) {
	want := map[string]int{"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "u32": 4, "i64": 8, "i8": 1, "u8": 1, "bool": 1, "f8e4m3": 1, "f8e5m2": 1}
	for name, size := range want {
		if got, ok := DTypeSize(name); !ok || got != size {
			t.Errorf("DTypeSize(%q) = %d, %v; want %d", name, got, ok, size)
		}
	}
	if _, ok := DTypeSize("f8"); ok {
		t.Error(`DTypeSize("f8") is known`)
	}
	if len(dtypes) != len(want) {
		t.Errorf("dtype table has %d rows, test knows %d", len(dtypes), len(want))
	}
}

func TestWriteFileAtomicPartial(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.bin")
	err := WriteFileAtomic(path, func(w io.Writer) error {
		w.Write(bytes.Repeat([]byte{1}, 1<<16))
		return errors.New("disk on fire")
	})
	if err == nil || err.Error() != "tensorio: "+path+": disk on fire" {
		t.Errorf("WriteFileAtomic = %v", err)
	}
	assertDir(t, dir)
}
