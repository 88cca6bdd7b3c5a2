package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// gcomp build --max-batch N traces a .go model over a batch in [1, N]: one build runs at every
// batch in range, and gcomp check compares it with the reference at each. Misuse is one error.
func TestBuildMaxBatch(t *testing.T) {
	model, err := filepath.Abs("../../examples/mlp/model.go")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"build", model, "--max-batch", "8", "-o", "m.ptx"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build failed: %s", stderr.String())
	}
	for _, n := range []int{1, 5, 8} {
		x := fmt.Sprintf("x%d.npy", n)
		vals := make([]float64, 64*n)
		for i := range vals {
			vals[i] = float64(i%13)/8 - 0.7
		}
		if err := tensorio.WriteNPYFile(x, tensor.FromFloats(ir.T(ir.F32, n, 64), vals).Array()); err != nil {
			t.Fatal(err)
		}
		stdout.Reset()
		if code := Main([]string{"check", "m.ptx", "--input", "x=" + x}, &stdout, &stderr); code != 0 ||
			!regexp.MustCompile(fmt.Sprintf(`f32\[%d,\d+\] .* ok\n`, n)).MatchString(stdout.String()) {
			t.Fatalf("check at batch %d: exit %d\n%s%s", n, code, stdout.String(), stderr.String())
		}
	}
	if err := os.WriteFile("s.gir", []byte("graph s {\n  input %x : f32[2]\n  output y = %x\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, want string }{
		{"build " + model + " --max-batch -1 -o o.ptx", "--max-batch -1: must be positive, without --batch"},
		// 0 is the flags' "not given"; written out it is a bound that is not positive, not absent.
		{"build " + model + " --max-batch 0 -o o.ptx", "--max-batch 0: must be positive, without --batch"},
		{"build " + model + " --batch 0 -o o.ptx", "--batch 0: must be positive"},
		{"run " + model + " --max-batch=0 --output-dir o.ptx", "--max-batch 0: must be positive, without --batch"},
		{"build " + model + " --max-batch 4 --batch 2 -o o.ptx", "--max-batch 4: must be positive, without --batch"},
		{"build s.gir --max-batch 4 -o o.ptx", "s.gir: a max batch bounds the batch of a .go model; a .gir model declares its dims itself"},
	} {
		stderr.Reset()
		code := Main(strings.Fields(tc.args), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.args, code, stderr.String(), tc.want)
		}
		if _, err := os.Stat("o.ptx"); err == nil {
			t.Errorf("%s: wrote o.ptx", tc.args)
		}
	}
}
