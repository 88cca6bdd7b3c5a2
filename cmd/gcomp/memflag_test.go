package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Under an address-space limit (prlimit --as, a container's limit alike), --ref-memory's default
// is half that limit, not half the machine's memory, and parameters count against the budget
// before they are converted: each case is a clean error where the run used to die of a fatal
// out-of-memory with a Go stack trace.
func TestRefMemoryUnderRlimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("prlimit is Linux's")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit (util-linux)")
	}
	const as = "4294967296" // 4 GiB: the default budget is then 2 GiB
	dir := t.TempDir()
	// 420M f32 elements are 3.36 GB held as float64: over the 2 GiB default, under half of a
	// machine with 8 GB or more, and more than the address space left beside the test binary.
	os.WriteFile(filepath.Join(dir, "const.gir"), []byte("graph g {\n  %0 = iota() {shape=[420000000], dim=0, dtype=f32} : f32[420000000]\n  output y = %0\n}\n"), 0o644)
	// 600M f32 parameters are 4.8 GB as float64: refused under --ref-memory 1GiB before binding.
	os.WriteFile(filepath.Join(dir, "param.gir"), []byte("graph g {\n  input %x : f32[2]\n  param %w : f32[600000000] {init=\"zeros\"}\n  %0 = neg(%x) : f32[2]\n  output y = %0\n}\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "const.gir", "--output-dir", "out"},
			"const.gir:2: %0 = iota() {dim=0, dtype=f32, shape=[420000000]} : f32[420000000]: the reference interpreter would hold 3360000000 bytes, more than its memory budget of"},
		{[]string{"run", "param.gir", "--ref-memory", "1GiB", "--output-dir", "out"},
			"param.gir:3: param %w : f32[600000000] {init=\"zeros\"}: the reference interpreter would hold 4800000016 bytes in inputs and parameters, more than its memory budget of 1073741824 bytes"},
	} {
		cmd := exec.Command(prlimit, "--as="+as, os.Args[0], "-test.run=^$")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), mainEnv+"="+strings.Join(tc.args, "\x1f"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		msg := strings.TrimSpace(stderr.String())
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("gcomp %s under prlimit --as=%s: %v, stderr:\n%.2000s\nwant one line containing %q", strings.Join(tc.args, " "), as, err, msg, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Errorf("a refused run wrote its output folder")
	}
}
