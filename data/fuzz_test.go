package data

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzReadIDX checks that ReadIDX never panics, never accepts more data than the header says,
// and that whatever it accepts survives a write and a second read unchanged. Inputs that once
// failed are kept in testdata/fuzz/FuzzReadIDX and run with every go test.
func FuzzReadIDX(f *testing.F) {
	for _, a := range sampleArrays() {
		var buf bytes.Buffer
		if err := WriteIDX(&buf, a); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
		f.Add(gzipped(buf.Bytes()))
	}
	paths, _ := filepath.Glob(filepath.Join(fixtureDir, "*labels*"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := ReadIDX(bytes.NewReader(in))
		if err != nil {
			return
		}
		if len(a.Data) != a.Len()*a.Type.Size() || len(a.Data) > len(in) && in[0] != 0x1f {
			t.Fatalf("accepted %s%v with %d bytes of data from %d bytes of input", a.Type, a.Dims, len(a.Data), len(in))
		}
		for i := range a.Len() {
			a.At(i)
		}
		var buf bytes.Buffer
		if err := WriteIDX(&buf, a); err != nil {
			t.Fatalf("WriteIDX of an array ReadIDX accepted: %v", err)
		}
		if in[0] != 0x1f && !bytes.Equal(buf.Bytes(), in) {
			t.Fatalf("WriteIDX(ReadIDX(in)) != in")
		}
		b, err := ReadIDX(&buf)
		if err != nil {
			t.Fatalf("ReadIDX of WriteIDX output: %v", err)
		}
		if a.Type != b.Type || !slices.Equal(a.Dims, b.Dims) || !bytes.Equal(a.Data, b.Data) {
			t.Fatalf("round trip: %s%v became %s%v", a.Type, a.Dims, b.Type, b.Dims)
		}
	})
}
