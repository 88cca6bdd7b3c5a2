package main

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
)

// An fp8 output is written as f32 holding the same values (NumPy has no fp8), and said so; a
// module for sm_90 runs fp8 on the simulator, and sm_80 refuses it naming the target.
func TestRunFP8Output(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	for _, d := range []string{"f8e4m3", "f8e5m2"} {
		src := "graph g {\n  input %x : f32[2,3]\n  %0 = cast(%x) {to=" + d + "} : " + d + "[2,3]\n  output y = %0\n}\n"
		if err := os.WriteFile(d+".gir", []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if code := Main([]string{"build", d + ".gir", "--target", "sm_90", "-o", d + ".ptx"}, &stdout, &stderr); code != 0 {
			t.Fatalf("build: %s", stderr.String())
		}
		for _, c := range []struct{ model, dev string }{{d + ".gir", "ref"}, {d + ".ptx", "sim"}} {
			stderr.Reset()
			if code := Main([]string{"run", c.model, "--device", c.dev, "--input", "x=x.npy", "--output-dir", d + c.dev}, &stdout, &stderr); code != 0 {
				t.Fatalf("%s on %s: %s", c.model, c.dev, stderr.String())
			}
			if !strings.Contains(stderr.String(), "gcomp: y is "+d+"[2,3], which NumPy lacks: written as f32 (exactly)") {
				t.Errorf("%s: stderr = %q", c.dev, stderr.String())
			}
			x, y := readNPY(t, "x.npy"), readNPY(t, d+c.dev+"/y.npy")
			if y.Type.String() != "f32[2,3]" {
				t.Fatalf("%s: y is %s", c.dev, y.Type)
			}
			for i, v := range x.F {
				if math.Abs(y.F[i]-v) > math.Abs(v)/8 && !math.IsNaN(v) {
					t.Errorf("%s: y[%d] = %v for x = %v", c.dev, i, y.F[i], v)
				}
			}
		}
		stderr.Reset()
		if code := Main([]string{"build", d + ".gir", "-o", "x80.ptx"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), d+" needs sm_89 or sm_90") || !strings.Contains(stderr.String(), "sm_80") {
			t.Errorf("build for sm_80: exit %d, %s", code, stderr.String())
		}
	}
}
