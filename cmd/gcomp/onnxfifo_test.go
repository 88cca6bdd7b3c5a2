//go:build unix

package main

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcomp/gcomp/tensorio"
)

// A named pipe without a writer as the model, as an --input .pb or as a --const .pb is one clear
// error and exit status 1, not a command that never returns.
func TestONNXNamedPipes(t *testing.T) {
	t.Chdir(t.TempDir())
	writeONNX(t)
	defer func(w time.Duration) { tensorio.FIFOWait = w }(tensorio.FIFOWait)
	tensorio.FIFOWait = 100 * time.Millisecond
	for _, name := range []string{"pipe.onnx", "pipe.pb"} {
		if err := syscall.Mkfifo(name, 0o600); err != nil {
			t.Skip("mkfifo:", err)
		}
	}
	flags := []string{"--shape", "input=2x2", "--device", "ref", "--output-dir", "out"}
	for _, args := range [][]string{
		{"run", "pipe.onnx"},
		{"run", "linear.onnx", "--const", "shape=shape.pb", "--input", "input=pipe.pb"},
		{"run", "linear.onnx", "--const", "shape=pipe.pb"},
	} {
		var stdout, stderr bytes.Buffer
		done := make(chan int, 1)
		go func() { done <- Main(append(args, flags...), &stdout, &stderr) }()
		select {
		case code := <-done:
			if code != 1 || !strings.Contains(stderr.String(), "named pipe that no writer opened") || strings.Contains(stderr.String(), "goroutine") {
				t.Errorf("%v: status %d, stderr %q", args, code, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%v: blocked", args)
		}
	}
}
