package sim

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// load decodes PTX from a string or, if it names a file, from testdata/.
func load(t testing.TB, dev *Device, src string) *Module {
	t.Helper()
	if !strings.Contains(src, "\n") {
		b, err := os.ReadFile(filepath.Join("testdata", src))
		if err != nil {
			t.Fatal(err)
		}
		src = string(b)
	}
	m, err := dev.Load(src)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return m
}

// kernel wraps a body in a module with one .entry.
func kernel(params, body string) string {
	return ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k(" + params + ")\n{\n" + body + "\n}\n"
}

func f32sBytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32s(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func u32sBytes(v []uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

func bytesU32s(b []byte) []uint32 {
	v := make([]uint32, len(b)/4)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return v
}

// upload allocates device memory holding data.
func upload(t testing.TB, dev *Device, data []byte) uint64 {
	t.Helper()
	a, err := dev.Alloc(len(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Write(a, data); err != nil {
		t.Fatal(err)
	}
	return a
}

func download(t testing.TB, dev *Device, addr uint64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if err := dev.Read(addr, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func grid(gx, bx int) Config {
	return Config{Grid: Dim3{gx, 1, 1}, Block: Dim3{bx, 1, 1}}
}

// mustErr asserts err is a check error of kind whose message contains all of want.
func mustErr(t *testing.T, err error, kind string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s error containing %q", kind, want)
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %v (%T), want *Error", err, err)
	}
	if e.Kind != kind {
		t.Fatalf("error kind %q, want %q: %v", e.Kind, kind, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
