package serve_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/serve"
	"github.com/gcomp/gcomp/tensor"
)

// A model PyTorch exported with its default names is served under the file's names: requests
// give "onnx::Gemm_0", replies carry "4" and "onnx::Relu_3", and an unknown name lists them.
func TestServeONNXFileNames(t *testing.T) {
	const dir = "../cmd/gcomp/testdata/torch_default_names/"
	m, err := gcomp.CompileFile(dir+"model.onnx", gcomp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := gcomp.Open(m, gcomp.SessionOptions{Device: "ref", Pool: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := serve.New(s, serve.Config{})
	hs := httptest.NewServer(srv.Handler())
	defer func() { hs.Close(); srv.Close() }()
	x, err := tensor.ReadNPYFile(dir + "x.npy")
	if err != nil {
		t.Fatal(err)
	}
	want, err := tensor.ReadNPYFile(dir + "y0.npy")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"inputs": map[string]any{"onnx::Gemm_0": map[string]any{"shape": []int{2, 2}, "data": x.F}}})
	status, _, out := post(t, hs.URL+"/v1/infer", "application/json", "", body)
	var r reply
	if err := json.Unmarshal(out, &r); status != 200 || err != nil {
		t.Fatalf("status %d: %s (%v)", status, out, err)
	}
	if _, ok := r.Outputs["onnx::Relu_3"]; !ok || len(r.Outputs["4"].Data) != len(want.F) {
		t.Fatalf("outputs %+v, want 4 and onnx::Relu_3", r.Outputs)
	}
	for i, w := range want.F {
		if d := r.Outputs["4"].Data[i] - w; d > 1e-6 || d < -1e-6 {
			t.Errorf("4[%d] = %v, PyTorch %v", i, r.Outputs["4"].Data[i], w)
		}
	}
	body = []byte(strings.Replace(string(body), "onnx::Gemm_0", "onnx__Gemm_0", 1))
	if status, _, out := post(t, hs.URL+"/v1/infer", "application/json", "", body); status != 400 || !strings.Contains(string(out), "onnx::Gemm_0") {
		t.Errorf("the graph's name: status %d, %s", status, out)
	}
}
