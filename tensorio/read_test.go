package tensorio

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ReadFile reads no more than a file holds or the limit allows, and says why it refuses.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	os.WriteFile(small, []byte("hello"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		max  int64
		want string // the content, or a substring of the error after "!"
	}{
		{small, 5, "hello"},
		{small, 4, "!the file is 5 bytes, more than the limit of 4"},
		{dir, 10, "!is a directory"},
		{filepath.Join(dir, "none"), 10, "!none: no such file"},
		{"/dev/zero", 1 << 10, "!not a regular file, and longer than the limit of 1024 bytes"},
		{fifo, 10, "piped"},
		{fifo, 3, "!longer than the limit of 3 bytes"},
	}
	for _, tc := range tests {
		if tc.path == fifo {
			go func() {
				f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err == nil {
					f.WriteString("piped")
					f.Close()
				}
			}()
		}
		got, err := ReadFile(tc.path, tc.max)
		if want, ok := strings.CutPrefix(tc.want, "!"); ok {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ReadFile(%s, %d) = %q, %v; want error %q", tc.path, tc.max, got, err, want)
			}
		} else if err != nil || string(got) != tc.want {
			t.Errorf("ReadFile(%s, %d) = %q, %v; want %q", tc.path, tc.max, got, err, tc.want)
		}
	}
}

// A safetensors file read from a pipe or device is read only as far as its header says:
// /dev/zero is refused at once, a pipe carrying a good file reads, and trailing bytes are found.
func TestReadSafetensorsStream(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, _, err := ReadSafetensorsFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "tensorio: /dev/zero: ") {
			t.Errorf("/dev/zero: err = %v", err)
		}
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "w.safetensors")
	a := &Array{DType: "f32", Shape: []int{2}, Data: make([]byte, 8)}
	if err := WriteSafetensorsFile(good, map[string]*Array{"w": a}, nil); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"good", "", data},
		{"trailing", "data section is 9 bytes but tensors cover 8", append(append([]byte(nil), data...), 0)},
		{"truncated", "out of range of the 7-byte data section", data[:len(data)-1]},
	} {
		fifo := filepath.Join(dir, tc.name)
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err == nil {
				f.Write(tc.data)
				f.Close()
			}
		}()
		ts, _, err := ReadSafetensorsFile(fifo)
		switch {
		case tc.want == "" && (err != nil || ts["w"] == nil):
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzReadSafetensorsStream checks that reading a safetensors file as a stream (a pipe, a
// device) accepts exactly what reading it whole accepts, with the same tensors.
func FuzzReadSafetensorsStream(f *testing.F) {
	var buf bytes.Buffer
	WriteSafetensors(&buf, map[string]*Array{"w": {DType: "f32", Shape: []int{2}, Data: make([]byte, 8)}, "e": {DType: "i64", Shape: []int{0}}}, map[string]string{"format": "pt"})
	f.Add(buf.Bytes())
	f.Add(append(buf.Bytes(), 0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, _, errWhole := ReadSafetensors(in)
		data, err := readSafetensorsStream(bytes.NewReader(in))
		var streamed map[string]*Array
		if err == nil {
			streamed, _, err = readSafetensors(data)
		}
		if (errWhole == nil) != (err == nil) {
			t.Fatalf("whole: %v; streamed: %v", errWhole, err)
		}
		if len(whole) != len(streamed) {
			t.Fatalf("whole: %d tensors; streamed: %d", len(whole), len(streamed))
		}
		for name, a := range whole {
			if b := streamed[name]; b == nil || !bytes.Equal(a.Data, b.Data) {
				t.Fatalf("tensor %q differs", name)
			}
		}
	})
}
