package passes_test

import (
	"fmt"
	"strings"
	"testing"

	fashioncnn "github.com/gcomp/gcomp/examples/fashion/cnn"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/train"
)

// TestCommCostExamples prints the communication model's numbers for docs/perf.md: the
// Fashion-MNIST CNN's train step (Adam, f32, batch 64 per rank) and GPT-2 small's (128 tokens)
// at 2, 8 and 64 ranks:
//
//	go test ./passes -run TestCommCostExamples -v
//
// The CNN's step is compiled whole; its backward time is the step's minus the forward's (with
// the loss). GPT-2 small's example has no loss head, so its step is modeled as three times its
// compiled forward pass and its backward as two (backward does about twice the forward's work).
func TestCommCostExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles GPT-2 small")
	}
	type example struct {
		name                  string
		grads                 []passes.Grad
		computeUS, backwardUS float64
	}
	var exs []example

	fwd, err := frontend.Build("fashion_cnn", fashioncnn.Model)
	if err != nil {
		t.Fatal(err)
	}
	withLoss, err := train.WithCrossEntropy(fwd, frontend.ReductionMean)
	if err != nil {
		t.Fatal(err)
	}
	step, err := train.StepFromGraph(withLoss, train.NewAdam(), train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stepStats, fwdStats := modeled(t, step.Graph), modeled(t, withLoss)
	var grads []passes.Grad
	for _, name := range step.Params {
		grads = append(grads, passes.Grad{Name: name, Bytes: int64(step.Graph.Lookup(name).Type.Bytes())})
	}
	exs = append(exs, example{"Fashion-MNIST CNN, Adam, f32, batch 64 per rank", grads, stepStats, stepStats - fwdStats})

	g, err := frontend.Build("gpt2small", gpt.GPT2Small)
	if err != nil {
		t.Fatal(err)
	}
	grads = nil
	for _, p := range g.Params() {
		if p.Type.DType.IsFloat() {
			grads = append(grads, passes.Grad{Name: p.Name, Bytes: int64(p.Type.Bytes())})
		}
	}
	f := modeled(t, g)
	exs = append(exs, example{"GPT-2 small, 128 tokens per rank", grads, 3 * f, 2 * f})

	var out strings.Builder
	for _, ex := range exs {
		fmt.Fprintf(&out, "%s: %d parameters\n", ex.name, len(ex.grads))
		for _, n := range []int{2, 8, 64} {
			r, err := passes.CommCost(passes.CommInput{Ranks: n, Grads: ex.grads, ComputeUS: ex.computeUS, BackwardUS: ex.backwardUS})
			if err != nil {
				t.Fatal(err)
			}
			if want := 2 * int64(n-1) * r.GradientBytes / int64(n); r.SentBytes != want {
				t.Errorf("%s at %d: sent %d, want %d", ex.name, n, r.SentBytes, want)
			}
			r.WriteTable(&out)
		}
	}
	t.Log("\n" + out.String())
}

// modeled is g's modeled time on one H100, kernels launched on a stream.
func modeled(t *testing.T, g *ir.Graph) float64 {
	t.Helper()
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Stats.ModeledTimeUS
}
