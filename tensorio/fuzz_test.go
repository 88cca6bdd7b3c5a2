package tensorio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// addSeeds adds every testdata file matching pattern to f's corpus.
func addSeeds(f *testing.F, pattern string) {
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzReadNPY checks that ReadNPY never panics and that whatever it accepts
// survives a write and a second read unchanged.
func FuzzReadNPY(f *testing.F) {
	addSeeds(f, "*.npy")
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := ReadNPY(bytes.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteNPY(&buf, a); err != nil {
			t.Fatalf("WriteNPY of an array ReadNPY accepted: %v", err)
		}
		b, err := ReadNPY(&buf)
		if err != nil {
			t.Fatalf("ReadNPY of WriteNPY output: %v", err)
		}
		if diff := cmp.Diff(a, b, equateEmpty); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

// FuzzReadSafetensors checks that ReadSafetensors never panics and that
// whatever it accepts survives a write and a second read unchanged.
func FuzzReadSafetensors(f *testing.F) {
	addSeeds(f, "*.safetensors")
	f.Add(stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[],"data_offsets":[8,10]}}`, "0123456789"))
	f.Fuzz(func(t *testing.T, in []byte) {
		ts, meta, err := ReadSafetensors(in)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteSafetensors(&buf, ts, meta); err != nil {
			t.Fatalf("WriteSafetensors of tensors ReadSafetensors accepted: %v", err)
		}
		ts2, meta2, err := ReadSafetensors(buf.Bytes())
		if err != nil {
			t.Fatalf("ReadSafetensors of WriteSafetensors output: %v", err)
		}
		if diff := cmp.Diff(ts, ts2, equateEmpty); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		if diff := cmp.Diff(meta, meta2, equateEmpty); diff != "" {
			t.Fatalf("metadata round trip (-first +second):\n%s", diff)
		}
	})
}
