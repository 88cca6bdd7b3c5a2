package train

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// The NVVM producer builds the steps training convolutions over a symbolic batch: each weight
// gradient folding the batch (one block along z) is its own entry (codegen/nvvm's symconv.go),
// as is every other kernel, and the step runs at batches 1 and 5 within tolerance of the
// reference's.
func TestSymbolicStepConvNVVM(t *testing.T) {
	lib := libnvvm.Require(t)
	nv, err := backend.New("nvvm", lib.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range symSteps {
		if !strings.Contains(tc.name, "trained") {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			fwd, err := frontend.Build("m", tc.model, frontend.WithMaxBatch(8), frontend.WithTraining())
			if err != nil {
				t.Fatal(err)
			}
			s, err := StepFromGraph(fwd, tc.opt, Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(s.Graph, StepCompilerOptions(compiler.Options{Producer: nv}))
			if err != nil {
				t.Fatal(err)
			}
			folds := 0
			for _, k := range res.Artifact.Plan.Kernels {
				if k.Producer == "ptx" {
					t.Errorf("kernel %s: codegen/ptx's entry (%v)", k.Name, k.Notes)
				}
				if strings.Contains(k.Name, "conv") && k.Work != nil && k.Work.Axis == 2 && k.Work.MaxBlocks == 1 {
					folds++
				}
			}
			if folds == 0 {
				t.Fatal("no conv weight gradient folding the batch")
			}
			checkStepRuns(t, s, res, []int64{1, 5})
		})
	}
}

// checkStepRuns loads res, the step s compiled over a symbolic batch, on a memchecked simulator
// and runs it at each of batches with seeded inputs and the bound's seeded parameters: its
// outputs equal the reference interpreter's step at that batch within tolerance, and each of
// same's (another producer's build of s) bit for bit.
func checkStepRuns(t *testing.T, s *StepGraph, res *compiler.Result, batches []int64, same ...*compiler.Result) {
	t.Helper()
	load := func(res *compiler.Result) *executor.Program {
		p, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	p := load(res)
	var others []*executor.Program
	for _, r := range same {
		others = append(others, load(r))
	}
	bound, err := ops.Instantiate(s.Graph, map[string]int64{frontend.BatchDim: int64(s.Graph.Dims[0].Hi)})
	if err != nil {
		t.Fatal(err)
	}
	_, params := seededNonZero(t, bound, 3)
	for _, p := range append([]*executor.Program{p}, others...) {
		if err := p.SetParams(params); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range batches {
		st, err := ops.Instantiate(s.Graph, map[string]int64{frontend.BatchDim: n})
		if err != nil {
			t.Fatal(err)
		}
		inputs, _, err := tensor.SeededValues(st, uint64(n))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(st, inputs, params)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(inputs)
		if err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		for i, o := range others {
			r, err := o.Run(inputs)
			if err != nil {
				t.Fatalf("batch %d, build %d: %v", n, i+1, err)
			}
			for name, x := range r.Outputs {
				if string(x.Bytes()) != string(got.Outputs[name].Bytes()) {
					t.Errorf("batch %d: %s differs from build %d's", n, name, i+1)
				}
			}
		}
		for name, w := range want {
			rel, abs := tolerance.Tolerance(w.Type.DType, false, 256)
			for i := range w.Len() {
				if g := got.Outputs[name].At(i); !tolerance.Within(g, w.At(i), rel, abs) {
					t.Fatalf("batch %d: %s[%d] = %v, the reference's %v", n, name, i, g, w.At(i))
				}
			}
		}
	}
}
