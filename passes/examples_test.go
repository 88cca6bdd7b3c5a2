package passes_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// exampleModels are every example, the Fashion-MNIST classifiers and custom kernels included.
var exampleModels = append(examples.All(), examples.Custom...)

// compileExample builds an example and runs the pipeline with every checker on.
func compileExample(t *testing.T, name string, model func(*frontend.Builder)) (*ir.Graph, *passes.Result) {
	t.Helper()
	g, err := frontend.Build(name, model)
	if err != nil {
		t.Fatalf("example does not build: %v", err)
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
// passes/ sections of the example's golden file, testdata/golden/NAME.txtar at the module root
// (go test -update rewrites them).
func TestExamples(t *testing.T) {
	for _, ex := range exampleModels {
		t.Run(ex.Name, func(t *testing.T) {
			g, res := compileExample(t, ex.Name, ex.Model)
			checkEquivalent(t, g, res, 1)
			path, comment := golden.Example("..", ex.Name)
			golden.CheckSections(t, path, comment, "passes", []txtar.File{
				{Name: "kernels.txt", Data: []byte(res.Kernels.String())},
				{Name: "plan.json", Data: res.Plan.JSON()},
				{Name: "stats.json", Data: res.Stats.JSON()},
			})
		})
	}
}

// Every example model (examples/NAME/model.go, or examples/GROUP/NAME/model.go listed as
// GROUP_NAME) is in the list above and has its golden file, so a new example cannot go without
// its kernel graph, plan and cost report pinned.
func TestEveryExampleHasGolden(t *testing.T) {
	root := filepath.Join("..", "examples")
	var models []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "model.go" {
			models = append(models, path)
		}
		return err
	})
	if err != nil || len(models) == 0 {
		t.Fatalf("no example models found: %v", err)
	}
	listed := map[string]bool{}
	for _, ex := range exampleModels {
		listed[ex.Name] = true
	}
	for _, m := range models {
		dir, _ := filepath.Rel(root, filepath.Dir(m))
		name := strings.ReplaceAll(filepath.ToSlash(dir), "/", "_")
		if !listed[name] {
			t.Errorf("example %s is not in exampleModels", name)
		}
		path, _ := golden.Example("..", name)
		if _, err := os.Stat(path); err != nil {
			t.Errorf("example %s has no golden file: %v", name, err)
		}
	}
	if len(models) != len(exampleModels) {
		t.Errorf("%d example models, %d listed", len(models), len(exampleModels))
	}
}
