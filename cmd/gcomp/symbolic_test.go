package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// gcomp run --device ref takes a symbolic model's inputs at any size in range; a size outside
// it, or another dtype or rank, is one error; gcomp build refuses the model for now.
func TestRunSymbolic(t *testing.T) {
	t.Chdir(t.TempDir())
	gir := "graph s {\n  dims { batch in [1,4] }\n  input %x : f32[batch,2]\n  %0 = neg(%x) : f32[batch,2]\n  output y = %0\n}\n"
	if err := os.WriteFile("s.gir", []byte(gir), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]*tensor.Tensor{
		"x3.npy": tensor.FromFloats(ir.T(ir.F32, 3, 2), []float64{1, 2, 3, 4, 5, 6}),
		"x5.npy": tensor.New(ir.T(ir.F32, 5, 2)),
		"x1.npy": tensor.New(ir.T(ir.F32, 1, 2, 1)),
		"xi.npy": tensor.New(ir.T(ir.I32, 2, 2)),
	} {
		if err := tensorio.WriteNPYFile(name, x.Array()); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"run", "s.gir", "--device", "ref", "--input", "x=x3.npy", "--output-dir", "out"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run failed: %s", stderr.String())
	}
	if y := readNPY(t, "out/y.npy"); !y.Type.Equal(ir.T(ir.F32, 3, 2)) || y.F[5] != -6 {
		t.Errorf("y = %s %v", y.Type, y.F)
	}
	for _, tc := range []struct{ args, want string }{
		{"run s.gir --input x=x5.npy --output-dir o", "input x: dim 0 (batch) is 5, outside batch's range [1,4]"},
		{"run s.gir --input x=x1.npy --output-dir o", "gcomp run: input x: x1.npy holds f32[1,2,1], the model wants f32[batch,2]"},
		{"run s.gir --input x=xi.npy --output-dir o", "gcomp run: input x: xi.npy holds i32[2,2], the model wants f32[batch,2]"},
		{"build s.gir -o s.ptx", "graph s has symbolic dims (batch): they are not compiled yet"},
	} {
		stderr.Reset()
		code := Main(strings.Fields(tc.args), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
