package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// gcomp run --device ref takes a symbolic model's inputs at any size in range; a size outside
// it, or another dtype or rank, is one error.
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
	} {
		stderr.Reset()
		code := Main(strings.Fields(tc.args), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// One gcomp build of a symbolic model runs on the simulator at several sizes, equal to the
// reference at each; a size out of range is one error, exit status 1; a model whose kernels are
// not all elementwise is refused at build time naming the kernel's kind.
func TestBuildRunSymbolic(t *testing.T) {
	t.Chdir(t.TempDir())
	// A softmax over each row (a row kernel) times the input; a sum over the symbolic axis.
	gir := "graph s {\n  dims { batch in [1,40] }\n  input %x : f32[batch,3]\n  %0 = reduce_max(%x) {axes=[1]} : f32[batch]\n" +
		"  %1 = broadcast_in_dim(%0) {shape=[40,3], dims=[0]} : f32[batch,3]\n  %2 = sub(%x, %1) : f32[batch,3]\n  %3 = exp(%2) : f32[batch,3]\n" +
		"  %4 = reduce_sum(%3) {axes=[1]} : f32[batch]\n  %5 = broadcast_in_dim(%4) {shape=[40,3], dims=[0]} : f32[batch,3]\n" +
		"  %6 = div(%3, %5) : f32[batch,3]\n  %7 = mul(%6, %x) : f32[batch,3]\n  output y = %7\n}\n"
	red := "graph r {\n  dims { batch in [1,40], t in [1,3] }\n  input %x : f32[batch,t,2]\n  %0 = reduce_sum(%x) {axes=[0,2]} : f32[t]\n  output y = %0\n}\n"
	for name, text := range map[string]string{"s.gir": gir, "r.gir": red} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"build", "s.gir", "-o", "s.ptx"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build failed: %s", stderr.String())
	}
	for _, n := range []int{40, 1, 7} {
		vals := make([]float64, 3*n)
		for i := range vals {
			vals[i] = float64(i%11) / 4
		}
		x := fmt.Sprintf("x%d.npy", n)
		if err := tensorio.WriteNPYFile(x, tensor.FromFloats(ir.T(ir.F32, n, 3), vals).Array()); err != nil {
			t.Fatal(err)
		}
		for _, dev := range []string{"sim", "ref"} {
			stderr.Reset()
			model := map[string]string{"sim": "s.ptx", "ref": "s.gir"}[dev]
			if code := Main([]string{"run", model, "--device", dev, "--input", "x=" + x, "--output-dir", dev + x}, &stdout, &stderr); code != 0 {
				t.Fatalf("run %s at %d: %s", dev, n, stderr.String())
			}
		}
		// gcomp check compares the simulator with the reference at these sizes, within the bounds.
		stdout.Reset()
		if code := Main([]string{"check", "s.ptx", "--input", "x=" + x}, &stdout, &stderr); code != 0 || !regexp.MustCompile(fmt.Sprintf(`y +f32\[%d,3\] .* ok\n`, n)).MatchString(stdout.String()) {
			t.Fatalf("check at %d: exit %d\n%s%s", n, code, stdout.String(), stderr.String())
		}
		got, want := readNPY(t, "sim"+x+"/y.npy"), readNPY(t, "ref"+x+"/y.npy")
		if !got.Type.Equal(ir.T(ir.F32, n, 3)) || !want.Type.Equal(got.Type) {
			t.Fatalf("batch %d: sim gives %s, ref %s", n, got.Type, want.Type)
		}
		for i := range want.F {
			if d := math.Abs(got.F[i] - want.F[i]); d > 1e-5*math.Abs(want.F[i]) {
				t.Errorf("batch %d: y[%d] = %v on the simulator, %v on the reference", n, i, got.F[i], want.F[i])
			}
		}
	}
	if err := tensorio.WriteNPYFile("x41.npy", tensor.New(ir.T(ir.F32, 41, 3)).Array()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, want string }{
		{"run s.ptx --device sim --input x=x41.npy --output-dir o", "input x: dim 0 (batch) is 41, outside batch's range [1,40]"},
		{"build r.gir -o r.ptx", "input %x : f32[batch,t,2] has batch*t rows, %0 = reduce_sum(%x) {axes=[0,2]} : f32[t] has t"},
	} {
		stderr.Reset()
		code := Main(strings.Fields(tc.args), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	if _, err := os.Stat("r.ptx"); err == nil {
		t.Errorf("a refused build wrote r.ptx")
	}
}
