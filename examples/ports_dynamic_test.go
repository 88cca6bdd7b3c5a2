package examples_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// portsMaxBatch is the bound the ports are traced over, as `gcomp build --max-batch 8` traces them.
const portsMaxBatch = 8

// TestPortsSymbolicBatch loads each line-by-line port over a symbolic batch in [1, 8], as `gcomp
// build --max-batch 8` does (load.Options.MaxBatch), builds it once, and runs that one artifact on
// the memchecked simulator at batches 1, 2 and 8, smallest first: at every batch against the
// reference interpreter at that batch (internal/tolerance's rule for the output's dtype), and at
// batch 2, the port's own, on the inputs and weights of `gcomp run` and `gcomp init-weights` (seed
// 0) against the outputs PyTorch computed in float64 (testdata/torch/ports/). ResNet-18 runs at
// full width (64–512 channels); the ONNX export suite's dynamic ResNet is the same topology at
// widths 4–32. The ViT's class token follows the batch through x.Size(0), torch's x.size(0).
// The full-width ResNet's simulation takes minutes: it is skipped under -short, as in
// TestPortsAgainstPyTorch.
func TestPortsSymbolicBatch(t *testing.T) {
	const torchBatch = 2 // the batch each port's model.go gives b.Batch, PyTorch's
	for _, c := range []struct {
		name string
		slow bool
	}{
		{"resnet", true},
		{"vit", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := "testdata/ports/" + c.name + "/model.go"
			src, err := os.ReadFile(filepath.Join("..", file))
			if err != nil {
				t.Fatal(err)
			}
			g, err := load.Source(file, src, load.Options{MaxBatch: portsMaxBatch})
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Dims) != 1 || g.Dims[0].Name != frontend.BatchDim || g.Dims[0].Lo != 1 || g.Dims[0].Hi != portsMaxBatch {
				t.Fatalf("dims %v, want batch in [1,%d]", g.Dims, portsMaxBatch)
			}
			// PyTorch's values: the static port's seeded inputs and weights (seed 0).
			static, err := load.Source(file, src, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			torchInputs, params, err := tensor.SeededValues(static, 0)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			plan := res.Artifact.Plan
			if len(plan.Dims) != 1 || plan.Dims[0].Name != frontend.BatchDim {
				t.Fatalf("the plan's dims are %v, want the batch", plan.Dims)
			}
			t.Logf("built once over batch in [1,%d] in %v: %d kernels", portsMaxBatch, time.Since(start).Round(time.Millisecond), len(plan.Kernels))
			if testing.Short() && c.slow {
				return
			}
			prog := loadSim(t, res.Artifact, params)
			torchDir := filepath.Join("..", "testdata", "torch", "ports", c.name)
			for _, n := range []int{1, torchBatch, portsMaxBatch} {
				inputs := torchInputs
				if n != torchBatch {
					if inputs, _, err = tensor.SeededValues(instantiated(t, g, n), uint64(n)); err != nil {
						t.Fatal(err)
					}
				}
				start := time.Now()
				sim, err := prog.Run(inputs)
				if err != nil {
					t.Fatalf("batch %d: %v", n, err)
				}
				simTime := time.Since(start)
				var insts int64
				for _, k := range sim.Kernels {
					insts += k.Counters.WarpInsts
				}
				t.Logf("batch %d: %d launches, %d warp instructions", n, len(sim.Kernels), insts)
				want, err := ref.Run(g, inputs, params)
				if err != nil {
					t.Fatalf("batch %d: reference interpreter: %v", n, err)
				}
				for _, o := range g.Outputs {
					got := sim.Outputs[o.Name]
					if got == nil || got.Type.Shape[0] != n {
						t.Fatalf("batch %d: output %s is %v", n, o.Name, got)
					}
					cmp := check.CompareIn(o.Name, got, want[o.Name], tolerance.Precision(o.Value), plan.TF32)
					if !cmp.Pass() {
						t.Fatalf("batch %d: %s: %d elements off the reference interpreter's (rel %g, abs %g): %s", n, o.Name, cmp.Bad, cmp.Rel, cmp.Abs, cmp.First)
					}
					t.Logf("batch %d: simulator %v: %s: max |sim - ref| = %.3g", n, simTime.Round(time.Millisecond), o.Name, cmp.MaxAbs)
				}
				if n == torchBatch {
					compareTorch(t, fmt.Sprintf("batch %d: simulator", n), torchDir, g, sim.Outputs, 1e-6)
				}
			}
		})
	}
}

// instantiated is g at batch n: the graph whose seeded inputs are that batch's.
func instantiated(t *testing.T, g *ir.Graph, n int) *ir.Graph {
	t.Helper()
	at, err := ops.Instantiate(g, map[string]int64{frontend.BatchDim: int64(n)})
	if err != nil {
		t.Fatal(err)
	}
	return at
}
