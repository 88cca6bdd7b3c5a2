//go:build unix

package tensorio

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe nobody writes must not block ReadFile forever (opening a FIFO for reading waits
// for a writer): after FIFOWait it is one clear error.
func TestReadFileFIFODoesNotBlock(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "x.pb")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	defer func(w time.Duration) { FIFOWait = w }(FIFOWait)
	FIFOWait = 100 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(fifo, 1<<20)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe that no writer opened") {
			t.Fatalf("ReadFile of a FIFO without a writer: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ReadFile of a FIFO without a writer blocked")
	}
}

// /dev/zero is endless: it is read up to the limit and refused.
func TestReadFileDevZeroBounded(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := ReadFile("/dev/zero", 1<<16)
	if err == nil || !strings.Contains(err.Error(), "longer than the limit") {
		t.Fatalf("ReadFile(/dev/zero) = %v, want the limit's error", err)
	}
	r := LimitReader(strings.NewReader(strings.Repeat("x", 100)), 10, "the test's limit")
	if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "the test's limit") {
		t.Fatalf("LimitReader over its limit: %v", err)
	}
	if b, err := io.ReadAll(LimitReader(strings.NewReader("0123456789"), 10, "")); err != nil || string(b) != "0123456789" {
		t.Fatalf("LimitReader at its limit: %q, %v", b, err)
	}
}

func TestInside(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "model")
	outside := filepath.Join(dir, "secret.csv")
	for _, p := range []string{filepath.Join(root, "sub"), filepath.Join(dir, "otherdir")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{outside, filepath.Join(root, "w.bin"), filepath.Join(root, "sub", "h.cuh")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.Symlink(outside, filepath.Join(root, "out.bin")))
	must(t, os.Symlink(filepath.Join(dir, "otherdir"), filepath.Join(root, "outdir")))
	must(t, os.Symlink("w.bin", filepath.Join(root, "in.bin")))
	tests := []struct {
		name, wantErr string
	}{
		{"w.bin", ""},
		{"sub/h.cuh", ""},
		{"sub/../w.bin", ""},
		{"in.bin", ""},
		{"", "empty"},
		{"/etc/passwd", "absolute"},
		{"../secret.csv", "leaves the folder"},
		{"sub/../../secret.csv", "leaves the folder"},
		{"out.bin", "outside the folder"},
		{"outdir/x", "no such file"},
		{"missing.bin", "no such file"},
		{"a\x00b", "NUL"},
	}
	for _, tc := range tests {
		got, err := Inside(root, tc.name)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("Inside(%q): %v", tc.name, err)
			} else if _, err := os.Stat(got); err != nil {
				t.Errorf("Inside(%q) = %s: %v", tc.name, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Inside(%q) = %q, %v; want an error with %q", tc.name, got, err, tc.wantErr)
		}
	}
	// A directory linked from inside to outside is refused for the files beneath it too.
	must(t, os.WriteFile(filepath.Join(dir, "otherdir", "x"), []byte("x"), 0o644))
	if _, err := Inside(root, "outdir/x"); err == nil || !strings.Contains(err.Error(), "outside the folder") {
		t.Errorf("Inside(outdir/x) through a linked directory: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
