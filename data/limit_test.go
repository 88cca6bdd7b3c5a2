package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// idxHeader is the header of u8 images [n,28,28].
func idxHeader(n int) []byte {
	h := []byte{0, 0, byte(U8), 3}
	for _, d := range []int{n, 28, 28} {
		h = binary.BigEndian.AppendUint32(h, uint32(d))
	}
	return h
}

// A gzipped IDX file whose header claims 300k images of 28x28 (235 MB) allocates only what it
// keeps: with a limit of 64, the images kept, however much the stream inflates to; a stream that
// ends early is refused as truncated.
func TestReadIDXLimitBoundsMemory(t *testing.T) {
	const claimed = 300_000
	dir := t.TempDir()
	write := func(name string, images int) string {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		zw.Write(idxHeader(claimed))
		zero := make([]byte, 28*28*1000)
		for i := 0; i < images; i += 1000 {
			zw.Write(zero[:28*28*min(1000, images-i)])
		}
		zw.Close()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	short, full := write("short.gz", 10_000), write("full.gz", claimed)
	for _, tc := range []struct {
		path, want string
	}{
		{short, "truncated data: u8[300000 28 28] needs 235200000 bytes, have 7840000"},
		{full, ""},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		a, err := ReadIDXFileLimit(tc.path, 64)
		runtime.ReadMemStats(&after)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err = %v, want %q", tc.path, err, tc.want)
			}
		} else if err != nil || a.Dims[0] != 64 || len(a.Data) != 64*28*28 {
			t.Fatalf("%s: %v", tc.path, err)
		}
		// The 235 MB the header claims are never held: a few MB of buffers at most.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
			t.Errorf("%s: reading 64 images allocated %d bytes", tc.path, alloc)
		}
	}
}

// The first limit items read with a limit are the first items of the whole file.
func TestReadIDXLimit(t *testing.T) {
	a := &Array{Type: U8, Dims: []int{4, 2}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	var buf bytes.Buffer
	if err := WriteIDX(&buf, a); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limit int
		dims  []int
		data  []byte
	}{{0, []int{4, 2}, a.Data}, {1, []int{1, 2}, a.Data[:2]}, {3, []int{3, 2}, a.Data[:6]}, {4, []int{4, 2}, a.Data}, {9, []int{4, 2}, a.Data}} {
		got, err := readIDX(bytes.NewReader(buf.Bytes()), tc.limit)
		if err != nil || !bytes.Equal(got.Data, tc.data) || len(got.Dims) != 2 || got.Dims[0] != tc.dims[0] {
			t.Errorf("limit %d: %v %v, want %v %v", tc.limit, got, err, tc.dims, tc.data)
		}
	}
	// Data after the array is found with a limit too.
	if _, err := readIDX(io.MultiReader(bytes.NewReader(buf.Bytes()), strings.NewReader("x")), 1); err == nil || !strings.Contains(err.Error(), "data after the array") {
		t.Errorf("trailing data with a limit: err = %v", err)
	}
}

// FuzzReadIDXLimit checks reading with a limit against reading everything: both accept or both
// refuse the same input, and the limited array is the first items of the whole one.
func FuzzReadIDXLimit(f *testing.F) {
	for _, a := range sampleArrays() {
		var buf bytes.Buffer
		if err := WriteIDX(&buf, a); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes(), 1)
		f.Add(gzipped(buf.Bytes()), 2)
	}
	f.Fuzz(func(t *testing.T, in []byte, limit int) {
		if limit < 0 {
			limit = -limit
		}
		all, errAll := readIDX(bytes.NewReader(in), 0)
		some, errSome := readIDX(bytes.NewReader(in), limit)
		if (errAll == nil) != (errSome == nil) {
			t.Fatalf("without a limit: %v; with limit %d: %v", errAll, limit, errSome)
		}
		if errAll != nil {
			return
		}
		want, dims := all.Data, all.Dims
		if limit > 0 && len(dims) > 0 && dims[0] > limit {
			want = want[:len(want)/dims[0]*limit]
			dims = append([]int{limit}, dims[1:]...)
		}
		if !bytes.Equal(some.Data, want) || fmt.Sprint(some.Dims) != fmt.Sprint(dims) {
			t.Fatalf("limit %d: %v %d bytes, want %v %d bytes", limit, some.Dims, len(some.Data), dims, len(want))
		}
	})
}
