package tensorio

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSafetensorsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	tensors := map[string]*Array{}
	for _, d := range dtypes {
		for i, shape := range testShapes {
			tensors[d.name+"/"+string(rune('a'+i))] = randomArray(rng, d.name, shape)
		}
	}
	for _, meta := range []map[string]string{nil, {"format": "pt", "ünï": "\"quoted\"\n"}} {
		var buf bytes.Buffer
		if err := WriteSafetensors(&buf, tensors, meta); err != nil {
			t.Fatal(err)
		}
		if hlen := binary.LittleEndian.Uint64(buf.Bytes()); hlen%8 != 0 {
			t.Errorf("header length %d is not a multiple of 8", hlen)
		}
		got, gotMeta, err := ReadSafetensors(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tensors, got, equateEmpty); diff != "" {
			t.Errorf("tensors (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(meta, gotMeta, equateEmpty); diff != "" {
			t.Errorf("metadata (-want +got):\n%s", diff)
		}
		// Deterministic: a copy of the map, built in another order, writes the same bytes.
		again := map[string]*Array{}
		for k, v := range got {
			again[k] = v
		}
		var buf2 bytes.Buffer
		if err := WriteSafetensors(&buf2, again, meta); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
			t.Error("writing the same tensors twice gave different bytes")
		}
	}
}

func TestSafetensorsEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	if want := "\x08\x00\x00\x00\x00\x00\x00\x00{}      "; buf.String() != want {
		t.Errorf("empty file = %q, want %q", buf.String(), want)
	}
	got, meta, err := ReadSafetensors(buf.Bytes())
	if err != nil || len(got) != 0 || meta != nil {
		t.Errorf("ReadSafetensors(empty) = %v, %v, %v", got, meta, err)
	}
}

// TestSafetensorsFixture reads a file laid out as the reference writer does:
// header keys not in name order, data ordered by alignment.
func TestSafetensorsFixture(t *testing.T) {
	got, meta, err := ReadSafetensorsFile("testdata/mixed.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	f16 := []byte{0x00, 0xb8, 0x00, 0x00, 0x00, 0x38} // -0.5, 0, 0.5
	want := map[string]*Array{
		"weight":   {DType: "f32", Shape: []int{2, 3}, Data: le32(0xbf800000, 0xbf000000, 0, 0x3f000000, 0x3f800000, 0x3fc00000)},
		"bias":     {DType: "f16", Shape: []int{3}, Data: f16},
		"emb.bf16": {DType: "bf16", Shape: []int{2, 3}, Data: []byte{0x80, 0xbf, 0x00, 0xbf, 0, 0, 0x00, 0x3f, 0x80, 0x3f, 0xc0, 0x3f}},
		"steps":    {DType: "i64", Shape: []int{}, Data: []byte{42, 0, 0, 0, 0, 0, 0, 0}},
		"mask":     {DType: "bool", Shape: []int{4}, Data: []byte{0, 1, 0, 0}},
		"empty":    {DType: "f32", Shape: []int{0, 2}, Data: []byte{}},
	}
	if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
		t.Errorf("tensors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"format": "pt", "note": "fixture"}, meta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	// Data slices alias the file but cannot grow into each other.
	w := got["weight"].Data
	_ = append(w, 0xff)
	if got["bias"].Data[0] != 0x00 {
		t.Error("append to one tensor's data overwrote another's")
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "out.safetensors")
	if err := WriteSafetensorsFile(path, got, meta); err != nil {
		t.Fatal(err)
	}
	again, meta2, err := ReadSafetensorsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, again, equateEmpty); diff != "" {
		t.Errorf("rewritten tensors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(meta, meta2); diff != "" {
		t.Errorf("rewritten metadata (-want +got):\n%s", diff)
	}
	err = WriteSafetensorsFile(path, map[string]*Array{"x": {DType: "f32", Data: []byte{1}}}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "tensorio: "+path+`: tensor "x": f32[] needs 4 data bytes, have 1`) {
		t.Errorf("WriteSafetensorsFile(bad) = %v", err)
	}
	assertDir(t, dir, "out.safetensors")
}

func le32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

// stFile builds a safetensors file from a header and a data section, as the
// format's specification describes it.
func stFile(header string, data string) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestSafetensorsErrors(t *testing.T) {
	eight := strings.Repeat("\x00", 8)
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "truncated header: want 8 bytes of header length, have 3"},
		{"header past end", stFile(`{}`, "")[:9], "truncated header: want 2 bytes, have 1"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, 1<<62), "header length 4611686018427387904 exceeds the limit"},
		{"bad JSON", stFile(`{"a":`, ""), "bad header JSON"},
		{"not object", stFile(`[1]`, ""), "bad header JSON: want an object"},
		{"trailing JSON", stFile(`{} {}`, ""), "trailing data after the object"},
		{"entry not object", stFile(`{"a":5}`, ""), `tensor "a": bad header JSON`},
		{"missing field", stFile(`{"a":{"dtype":"F32","shape":[1]}}`, "\x00\x00\x00\x00"), `tensor "a": want dtype, shape and data_offsets`},
		{"unknown dtype", stFile(`{"a":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}}`, "\x00"), `tensor "a": unknown dtype "F8"`},
		{"negative dim", stFile(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, "\x00"), "bad dimension -1"},
		{"overflow", stFile(`{"a":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}}`, eight), "too large"},
		{"offsets count", stFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}}`, "\x00"), "data_offsets has 1 entries, want 2"},
		{"offsets range", stFile(`{"a":{"dtype":"U8","shape":[9],"data_offsets":[0,9]}}`, eight), "data_offsets [0, 9] out of range of the 8-byte data section"},
		{"offsets reversed", stFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}}`, eight), "out of range"},
		{"wrong size", stFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, eight), "data_offsets [0, 8] span 8 bytes, but f32[3] needs 12"},
		{"overlap", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), `tensor "b": data_offsets [4, 8] overlap tensor "a"`},
		{"gap", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), `tensor "a": gap in data before offset 4`},
		{"uncovered", stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, eight), "data section is 8 bytes but tensors cover 4"},
		{"truncated data", stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, "\x00\x00"), "out of range of the 2-byte data section"},
		{"duplicate", stFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, "\x00\x00"), `duplicate key "a"`},
		{"metadata type", stFile(`{"__metadata__":{"n":1}}`, ""), "bad __metadata__"},
		{"float offsets", stFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1.5]}}`, "\x00"), `tensor "a": bad header JSON`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadSafetensors(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "tensorio: safetensors: ") {
				t.Errorf("ReadSafetensors = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestWriteSafetensorsErrors(t *testing.T) {
	tests := []struct {
		tensors map[string]*Array
		want    string
	}{
		{map[string]*Array{"__metadata__": {DType: "u8", Shape: []int{}, Data: []byte{0}}}, "reserved"},
		{map[string]*Array{"x": nil}, `tensor "x": nil array`},
		{map[string]*Array{"x": {DType: "c64"}}, `unknown dtype "c64"`},
	}
	for _, tt := range tests {
		err := WriteSafetensors(&bytes.Buffer{}, tt.tensors, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("WriteSafetensors = %v, want %q", err, tt.want)
		}
	}
	if _, _, err := ReadSafetensorsFile(filepath.Join(t.TempDir(), "missing")); err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("ReadSafetensorsFile(missing) = %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}
