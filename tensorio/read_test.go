package tensorio

import (
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
