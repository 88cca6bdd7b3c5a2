package suite_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// TestExportedDynamicNVVM: TestExportedDynamic's transformer block (a static batch of 2 before
// the symbolic seq, bound 512) built once with --backend nvvm takes no codegen/ptx entry: its
// strided kernels (attention on CUDA cores, the projection over the merged heads) are the NVVM
// producer's own. The one build runs at seq 1, 7 and 512 on the memchecked simulator against
// PyTorch.
func TestExportedDynamicNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	nv, err := backend.New("nvvm", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "dynamic")
	m, err := onnx.ImportFile(filepath.Join(dir, "seq_attn_opset13.onnx"), onnx.Options{MaxShapes: map[string][]int{"x": {2, 512, 16}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(m.Graph, compiler.Options{Producer: nv})
	if err != nil {
		t.Fatal(err)
	}
	symbolic := 0
	for _, k := range res.Artifact.Plan.Kernels {
		if k.Producer == "ptx" {
			t.Errorf("kernel %s: codegen/ptx's entry (%v)", k.Name, k.Notes)
		}
		if k.Work != nil {
			symbolic++
		}
	}
	if symbolic == 0 {
		t.Fatal("no symbolic kernel in the plan")
	}
	if testing.Short() {
		return
	}
	weights, err := m.Weights.Map()
	if err != nil {
		t.Fatal(err)
	}
	p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.SetParams(weights); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 7, 512} {
		sub := filepath.Join(dir, fmt.Sprintf("seq_attn_size%d", n))
		x, err := tensor.ReadNPYFile(filepath.Join(sub, "x.npy"))
		if err != nil {
			t.Fatal(err)
		}
		y, err := tensor.ReadNPYFile(filepath.Join(sub, "y.npy"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(map[string]*tensor.Tensor{"x": x})
		if err != nil {
			t.Fatalf("seq %d: %v", n, err)
		}
		within(t, fmt.Sprintf("seq %d: simulator: y", n), got.Outputs["y"], y)
	}
}
