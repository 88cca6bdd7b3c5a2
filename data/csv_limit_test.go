package data

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcomp/gcomp/tensorio"
)

// A CSV path that is not what it seems is one clear error, in bounded time and memory: a named
// pipe nobody writes is refused instead of blocking open forever, /dev/zero stops at the
// budget, rows past the budget are refused as they are read; a UTF-8 byte-order mark before the
// header is dropped, as Python's utf-8-sig does.
func TestReadCSVFileNotWhatItSeems(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rows := "a,y\n" + strings.Repeat("1,2\n", 1000)
	defer SetMemoryBudget(0)
	shortFIFOWait(t)
	for _, tc := range []struct {
		name, path string
		budget     int64
		want       string // "" for success
	}{
		{"fifo", fifo, 0, "pipe.csv: a named pipe that no writer opened within 200ms"},
		{"dev zero", "/dev/zero", 1 << 20, "data: /dev/zero: longer than the data memory budget (1048576 bytes)"},
		{"rows over the budget", write("rows.csv", rows), 4000, "rows.csv:168: the rows so far hold 4008 bytes, more than the data memory budget (4000 bytes)"},
		{"rows within the budget", write("rows2.csv", rows), 1 << 20, ""},
		{"bom", write("bom.csv", "\ufeffy,a\n1,2\n"), 0, ""},
		{"bom quoted", write("bomq.csv", "\ufeff\"y\",a\n1,2\n"), 0, ""},
		{"directory", dir, 0, "is a directory"},
	} {
		if _, err := os.Stat(tc.path); err != nil {
			continue // no /dev/zero
		}
		SetMemoryBudget(tc.budget)
		checkRead(t, tc.name, tc.want, func() error { _, err := ReadCSVFile(tc.path, "y"); return err })
	}
}

// shortFIFOWait makes tensorio give up on a named pipe without a writer after 200ms.
func shortFIFOWait(t *testing.T) {
	w := tensorio.FIFOWait
	tensorio.FIFOWait = 200 * time.Millisecond
	t.Cleanup(func() { tensorio.FIFOWait = w })
}

// checkRead runs read, which must end within 10s with an error containing want (none for "").
func checkRead(t *testing.T, name, want string, read func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: err = %v, want %q", name, err, want)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("%s: still blocked after 10s", name)
	}
}

// A named pipe that a writer feeds is read like a file.
func TestReadCSVFileFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			w.WriteString("a,y\n1,2\n3,4\n")
			w.Close()
		}
	}()
	d, err := ReadCSVFile(fifo, "y")
	if err != nil || d.Len() != 2 || d.Y.F[1] != 4 {
		t.Fatalf("ReadCSVFile(fifo) = %v, %v", d, err)
	}
}
