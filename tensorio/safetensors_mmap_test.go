//go:build unix

package tensorio

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// eachMode runs f with the file mapped and with the read fallback of systems without mmap.
func eachMode(t *testing.T, f func(t *testing.T)) {
	for _, mapped := range []bool{true, false} {
		name := "mapped"
		if !mapped {
			name = "read"
		}
		t.Run(name, func(t *testing.T) {
			defer func(old bool) { useMap = old }(useMap)
			useMap = mapped
			f(t)
		})
	}
}

// viewAll reads every tensor of s, copying the data out of the mapping.
func viewAll(t testing.TB, s *SafetensorsFile) map[string]*Array {
	got := map[string]*Array{}
	for _, name := range s.Names() {
		a, err := s.View(name)
		if err != nil {
			t.Fatal(err)
		}
		dtype, shape, ok := s.Info(name)
		if !ok || dtype != a.DType || !slices.Equal(shape, a.Shape) {
			t.Fatalf("Info(%q) = %s%v %v, View has %s%v", name, dtype, shape, ok, a.DType, a.Shape)
		}
		a.Data = bytes.Clone(a.Data)
		got[name] = a
	}
	return got
}

func TestOpenSafetensorsFile(t *testing.T) {
	want, wantMeta, err := ReadSafetensorsFile("testdata/mixed.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	eachMode(t, func(t *testing.T) {
		s, err := OpenSafetensorsFile("testdata/mixed.safetensors")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, viewAll(t, s), equateEmpty); diff != "" {
			t.Errorf("tensors (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantMeta, s.Metadata()); diff != "" {
			t.Errorf("metadata (-want +got):\n%s", diff)
		}
		if _, err := s.View("nope"); err == nil || !strings.Contains(err.Error(), `no tensor "nope"`) {
			t.Errorf("View(nope) = %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.View("weight"); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("View after Close = %v", err)
		}
	})
}

func TestOpenSafetensorsFileErrors(t *testing.T) {
	defer func(old time.Duration) { FIFOWait = old }(FIFOWait)
	FIFOWait = 50 * time.Millisecond
	dir := t.TempDir()
	good := stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, "01234567")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	huge := append([]byte(nil), good...)
	huge[0], huge[1] = 0, 1 // 256 bytes of header in a file of 70
	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "missing"), "no such file"},
		{"empty", write("empty", nil), "truncated header: want 8 bytes of header length, have 0"},
		{"short", write("short", []byte{1, 2}), "want 8 bytes of header length, have 2"},
		{"header past end", write("huge", huge), "truncated header: want 256 bytes, have 62"},
		{"truncated data", write("trunc", good[:len(good)-3]), "out of range of the 5-byte data section"},
		{"trailing data", write("trail", append(bytes.Clone(good), 'x')), "data section is 9 bytes but tensors cover 8"},
		{"directory", dir, "is a directory"},
		{"fifo", fifo, "named pipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachMode(t, func(t *testing.T) {
				s, err := OpenSafetensorsFile(tt.path)
				if err == nil {
					s.Close()
				}
				if err == nil || !strings.HasPrefix(err.Error(), "tensorio: "+tt.path+": ") || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("OpenSafetensorsFile = %v, want an error naming the file and containing %q", err, tt.want)
				}
			})
		})
	}
}

// FuzzOpenSafetensorsFile checks the file reader against the in-memory reader: both accept the
// same files and read the same tensors.
func FuzzOpenSafetensorsFile(f *testing.F) {
	addSeeds(f, "*.safetensors")
	f.Add(stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[],"data_offsets":[8,10]}}`, "0123456789"))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in []byte) {
		path := filepath.Join(dir, "f.safetensors")
		if err := os.WriteFile(path, in, 0o644); err != nil {
			t.Fatal(err)
		}
		want, wantMeta, werr := ReadSafetensors(in)
		s, err := OpenSafetensorsFile(path)
		if (err == nil) != (werr == nil) {
			t.Fatalf("OpenSafetensorsFile error %v, ReadSafetensors error %v", err, werr)
		}
		if err != nil {
			return
		}
		defer s.Close()
		if diff := cmp.Diff(want, viewAll(t, s), equateEmpty); diff != "" {
			t.Fatalf("tensors (-ReadSafetensors +OpenSafetensorsFile):\n%s", diff)
		}
		if diff := cmp.Diff(wantMeta, s.Metadata(), equateEmpty); diff != "" {
			t.Fatalf("metadata (-ReadSafetensors +OpenSafetensorsFile):\n%s", diff)
		}
	})
}
