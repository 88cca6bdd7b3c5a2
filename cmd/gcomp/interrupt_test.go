package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildGcomp builds the gcomp binary into a temporary directory.
func buildGcomp(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gcomp")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// SIGINT or SIGTERM during init-weights' write removes its hidden temporary file; the command
// exits with status 1 and one line saying it was interrupted.
func TestInterruptRemovesTemporaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and writes 256 MB")
	}
	bin := buildGcomp(t)
	dir := t.TempDir()
	model := "package big\n\nimport (\n\t\"github.com/gcomp/gcomp/frontend\"\n\t\"github.com/gcomp/gcomp/ir\"\n)\n\nfunc Model(b *frontend.Builder) {\n\tx := b.Input(\"x\", ir.F32, 8192)\n\tw := b.Param(\"w\", ir.T(ir.F32, 8192, 8192), frontend.Ones())\n\tb.Output(\"y\", w.Mul(x))\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "big.go"), []byte(model), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(bin, "init-weights", "big.go", "-o", "w.safetensors")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Wait for the temporary to appear, then interrupt.
		for {
			if m, _ := filepath.Glob(filepath.Join(dir, ".w.safetensors.tmp*")); len(m) > 0 {
				break
			}
			select {
			case err := <-exited:
				t.Fatalf("gcomp exited (%v) before the test saw its temporary; stderr:\n%s", err, stderr.String())
			case <-time.After(time.Millisecond):
			}
		}
		cmd.Process.Signal(sig)
		err := <-exited
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%v: %v, want exit status 1; stderr:\n%s", sig, err, stderr.String())
		}
		if msg := stderr.String(); !strings.HasPrefix(msg, "gcomp: interrupted") || strings.Count(msg, "\n") != 1 {
			t.Errorf("%v: stderr = %q", sig, msg)
		}
		if names := listFiles(t, dir); strings.Join(names, " ") != ". big.go" {
			t.Errorf("%v: the directory holds %v", sig, names)
		}
	}
}
