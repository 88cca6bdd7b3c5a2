package suite_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// TestExportedDecoderPast imports a decoder layer's step exported with past_key_values
// (scripts/export_dynamic_past.py: the cache grown by torch.cat along the dynamic axis past) with
// --max-shape bounding past at 63, builds it once (the concat along past runs as codegen/ptx's
// concat copy, the attention as split-KV decoding over the cache length), and runs it at past 1,
// 13 and 63 on the memchecked simulator and on the reference interpreter against PyTorch's y,
// present_k and present_v.
func TestExportedDecoderPast(t *testing.T) {
	const name = "decoder_past"
	dir := filepath.Join("testdata", "dynamic")
	max := map[string][]int{"past_k": {1, 2, 63, 8}, "past_v": {1, 2, 63, 8}}
	m, err := onnx.ImportFile(filepath.Join(dir, name+"_opset13.onnx"), onnx.Options{MaxShapes: max})
	if err != nil {
		t.Fatal(err)
	}
	if g := m.Graph; len(g.Dims) != 1 || g.Dims[0].Name != "past" || g.Dims[0].Hi != 63 {
		t.Fatalf("dims %v, want past in [lo,63]", g.Dims)
	}
	weights, err := m.Weights.Map()
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(m.Graph, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if text := string(res.Artifact.PTX); !strings.Contains(text, "operand 1 of the concat") || !strings.Contains(text, "split-KV attention, over cache length") {
		t.Error("the step is not the concat copy and the split-KV attention over the cache length")
	}
	p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.SetParams(weights); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 13, 63} {
		sub := filepath.Join(dir, fmt.Sprintf("%s_past%d", name, n))
		read := func(f string) *tensor.Tensor {
			x, err := tensor.ReadNPYFile(filepath.Join(sub, f+".npy"))
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
		in := map[string]*tensor.Tensor{"x": read("x"), "past_k": read("past_k"), "past_v": read("past_v")}
		want, err := ref.Run(m.Graph, in, weights)
		if err != nil {
			t.Fatalf("past %d: %v", n, err)
		}
		got, err := p.Run(in)
		if err != nil {
			t.Fatalf("past %d: %v", n, err)
		}
		for _, o := range []string{"y", "present_k", "present_v"} {
			torch := read(o)
			within(t, fmt.Sprintf("past %d: reference: %s", n, o), want[o], torch)
			within(t, fmt.Sprintf("past %d: simulator: %s", n, o), got.Outputs[o], torch)
		}
	}
}
