package gcomp_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/tensor"
)

// An .onnx model PyTorch exported with its default names ("onnx::Gemm_0" in, "4" and
// "onnx::Relu_3" out) is compiled, described and run under the file's names on every device;
// errors name them too.
func TestONNXDefaultNames(t *testing.T) {
	const dir = "cmd/gcomp/testdata/torch_default_names/"
	x, err := tensor.ReadNPYFile(dir + "x.npy")
	if err != nil {
		t.Fatal(err)
	}
	m, err := gcomp.CompileFile(dir+"model.onnx", gcomp.Options{Shapes: map[string][]int{"onnx::Gemm_0": {2, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if in, outs := m.Inputs(), m.Outputs(); len(in) != 1 || in[0].Name != "onnx::Gemm_0" || len(outs) != 2 || outs[0].Name != "4" || outs[1].Name != "onnx::Relu_3" {
		t.Fatalf("inputs %v, outputs %v: want the file's names", in, outs)
	}
	for _, dev := range []string{"ref", "sim"} {
		s, err := gcomp.Open(m, gcomp.SessionOptions{Device: dev, Pool: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		out, err := s.Run(context.Background(), map[string]*gcomp.Tensor{"onnx::Gemm_0": gcomp.FromHost(x)})
		if err != nil {
			t.Fatal(err)
		}
		for name, file := range map[string]string{"4": "y0.npy", "onnx::Relu_3": "y1.npy"} {
			want, err := tensor.ReadNPYFile(dir + file)
			if err != nil {
				t.Fatal(err)
			}
			if out[name] == nil {
				t.Fatalf("%s: no output %q in %v", dev, name, out)
			}
			y := out[name].Host()
			for i := range want.F {
				if d := y.F[i] - want.F[i]; d > 1e-5 || d < -1e-5 {
					t.Fatalf("%s: %s[%d] = %v, PyTorch %v", dev, name, i, y.F[i], want.F[i])
				}
			}
		}
		_, err = s.Run(context.Background(), map[string]*gcomp.Tensor{"onnx__Gemm_0": gcomp.FromHost(x)})
		if !errors.Is(err, gcomp.ErrMissingInput) || !strings.Contains(err.Error(), "no value for input onnx::Gemm_0") {
			t.Fatalf("%s: a run under the graph's name: %v", dev, err)
		}
	}
}
