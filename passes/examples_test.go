package passes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/examples/cnn"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/examples/linreg"
	"github.com/gcomp/gcomp/examples/lstm"
	"github.com/gcomp/gcomp/examples/mlp"
	"github.com/gcomp/gcomp/examples/rnn"
	"github.com/gcomp/gcomp/examples/transformer"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"golang.org/x/tools/txtar"
)

var exampleModels = []struct {
	name  string
	model func(*frontend.Builder)
}{
	{"linreg", linreg.Model},
	{"mlp", mlp.Model},
	{"cnn", cnn.Model},
	{"rnn", rnn.Model},
	{"lstm", lstm.Model},
	{"transformer", transformer.Model},
	{"gpt", gpt.Model},
}

// compileExample builds an example and runs the pipeline with every checker on. It skips the
// test if the example does not build (its owner may be editing it).
func compileExample(t *testing.T, name string, model func(*frontend.Builder)) (*ir.Graph, *passes.Result) {
	t.Helper()
	g, err := frontend.Build(name, model)
	if err != nil {
		t.Skipf("example does not build: %v", err)
	}
	res, err := passes.Run(g, passes.Options{VerifyEach: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.CheckPlan(res.Kernels, res.Plan); err != nil {
		t.Fatal(err)
	}
	return g, res
}

// Every example compiles with the checkers on after every pass, its kernels compute bit for bit
// what the source graph computes, and its kernel graph, memory plan and cost report match the
// golden file testdata/NAME.txtar (go test -update rewrites them).
func TestExamples(t *testing.T) {
	for _, ex := range exampleModels {
		t.Run(ex.name, func(t *testing.T) {
			g, res := compileExample(t, ex.name, ex.model)
			checkEquivalent(t, g, res, 1)
			golden.CheckTxtar(t, filepath.Join("testdata", ex.name+".txtar"),
				fmt.Sprintf("The %s example after the pass pipeline: kernels, memory plan, cost report.\n", ex.name),
				[]txtar.File{
					{Name: "kernels.txt", Data: []byte(res.Kernels.String())},
					{Name: "plan.json", Data: res.Plan.JSON()},
					{Name: "stats.json", Data: res.Stats.JSON()},
				})
		})
	}
}

// Every example model (examples/NAME/model.go) is in the list above and has its golden file, so
// a new example cannot go without its kernel graph, plan and cost report pinned.
func TestEveryExampleHasGolden(t *testing.T) {
	models, err := filepath.Glob(filepath.Join("..", "examples", "*", "model.go"))
	if err != nil || len(models) == 0 {
		t.Fatalf("no example models found: %v", err)
	}
	listed := map[string]bool{}
	for _, ex := range exampleModels {
		listed[ex.name] = true
	}
	for _, m := range models {
		name := filepath.Base(filepath.Dir(m))
		if !listed[name] {
			t.Errorf("example %s is not in exampleModels", name)
		}
		if _, err := os.Stat(filepath.Join("testdata", name+".txtar")); err != nil {
			t.Errorf("example %s has no golden file: %v", name, err)
		}
	}
	if len(models) != len(exampleModels) {
		t.Errorf("%d example models, %d listed", len(models), len(exampleModels))
	}
}
