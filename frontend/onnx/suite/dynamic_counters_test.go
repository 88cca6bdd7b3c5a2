package suite_test

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// TestExportedDynamicCounters: the transformer export's one build for seq 1..512, run at seq 64,
// executes about the warp instructions of the static build at 64 on the simulator: its
// attention computes lengths and strides once per block, within 5% of the static kernel's, and
// the whole run within 15% (the symbolic GEMMs read the rows unbatched, or the merged heads
// through run-time index arithmetic). -v prints each kernel's counts (docs/perf.md).
func TestExportedDynamicCounters(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates the model twice")
	}
	const n = 64
	file := filepath.Join("testdata", "dynamic", "seq_attn_opset13.onnx")
	count := func(opt onnx.Options) map[string]int64 {
		m, err := onnx.ImportFile(file, opt)
		if err != nil {
			t.Fatal(err)
		}
		w, err := m.Weights.Map()
		if err != nil {
			t.Fatal(err)
		}
		res, err := compiler.Compile(m.Graph, compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.SetParams(w); err != nil {
			t.Fatal(err)
		}
		x := tensor.New(ir.T(ir.F32, 2, n, 16))
		for i := range x.F {
			x.F[i] = float64(i%7)/7 - 0.5
		}
		got, err := p.Run(map[string]*tensor.Tensor{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		c := map[string]int64{}
		for _, k := range got.Kernels {
			c[k.Name] = k.Counters.WarpInsts
		}
		return c
	}
	dyn := count(onnx.Options{MaxShapes: map[string][]int{"x": {2, 512, 16}}})
	static := count(onnx.Options{Shapes: map[string][]int{"x": {2, n, 16}}})
	var sd, ss int64
	for _, name := range slices.Sorted(maps.Keys(dyn)) {
		d := dyn[name]
		s, ok := static[name]
		if !ok {
			t.Fatalf("kernel %s of the symbolic build is not in the static one %v", name, static)
		}
		t.Logf("%-20s symbolic %9d static %9d warp instructions (%.2f)", name, d, s, float64(d)/float64(s))
		sd, ss = sd+d, ss+s
		if name == "k2_attention" && float64(d) > 1.05*float64(s) {
			t.Errorf("symbolic attention: %d warp instructions, static %d", d, s)
		}
	}
	t.Logf("total: symbolic %d, static %d (%.2f)", sd, ss, float64(sd)/float64(ss))
	if float64(sd) > 1.15*float64(ss) {
		t.Errorf("the symbolic build runs %d warp instructions at seq %d, the static %d", sd, n, ss)
	}
}
