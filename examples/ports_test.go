package examples_test

import (
	"github.com/gcomp/gcomp/artifact"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
	portresnet "github.com/gcomp/gcomp/testdata/ports/resnet"
	portvit "github.com/gcomp/gcomp/testdata/ports/vit"
)

// ports are PyTorch models ported line by line, the way their users write them, in
// testdata/ports/NAME/model.go: torchvision's resnet18 (a BasicBlock type of the file's own inside
// nn.NewSequential, the shortcut a downsample Sequential) and a ViT over
// nn.TransformerEncoderLayer with dropout 0.1. They live outside examples/ so that they carry no
// golden files (resnet18 compiles to a large kernel graph); slow ones skip the simulator with
// -short.
var ports = []struct {
	name  string
	model func(*frontend.Builder)
	slow  bool
}{
	{"resnet", portresnet.Model, true},
	{"vit", portvit.Model, false},
}

// TestPortsAgainstPyTorch builds each line-by-line port through the interpreter, as gcomp does,
// and as compiled Go, and wants: the same graph both ways; its parameters exactly the keys,
// dtypes and shapes of PyTorch's full state_dict (what --strict requires of a file); and, with the
// weights of `gcomp init-weights` and the inputs of `gcomp run` (seed 0), the outputs PyTorch
// computed in float64 (scripts/torch_reference.sh wrote testdata/torch/ports/; PyTorch
// loaded the weights with load_state_dict(strict=True)), on the reference interpreter and on the
// simulator.
func TestPortsAgainstPyTorch(t *testing.T) {
	for _, p := range ports {
		t.Run(p.name, func(t *testing.T) {
			file := "testdata/ports/" + p.name + "/model.go"
			src, err := os.ReadFile(filepath.Join("..", file))
			if err != nil {
				t.Fatal(err)
			}
			g, err := load.Source(file, src, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			compiled, err := frontend.Build(g.Name, p.model)
			if err != nil {
				t.Fatal(err)
			}
			// The same graph, at the same lines: positions name the file as it was loaded.
			if strings.ReplaceAll(g.String(), `loc("testdata/ports/`+p.name+"/", `loc("`) != compiled.String() {
				t.Fatalf("the compiled model's graph differs from the interpreted one's")
			}
			torchDir := filepath.Join("..", "testdata", "torch", "ports", p.name)
			want := readStateDict(t, filepath.Join(torchDir, "state_dict.txt"))
			var got []string
			for _, v := range g.Params() {
				got = append(got, v.Name+" "+v.Type.String())
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("parameters differ from PyTorch's state_dict:\n got %v\nwant %v", got, want)
			}
			inputs, params, outs := runSeeded(t, g)
			compareTorch(t, "reference interpreter", torchDir, g, outs, 1e-6)
			if testing.Short() && p.slow {
				return
			}
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			prog := loadSim(t, res.Artifact, params)
			sim, err := prog.Run(inputs)
			if err != nil {
				t.Fatal(err)
			}
			compareTorch(t, "simulator", torchDir, g, sim.Outputs, 1e-6)
		})
	}
}

// readStateDict reads the "name dtype[shape]" lines the reference script wrote, sorted.
func readStateDict(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	slices.Sort(lines)
	return lines
}

// loadSim loads a on a fresh memchecked simulator with params bound; both close when t ends.
func loadSim(t *testing.T, a *artifact.Artifact, params map[string]*tensor.Tensor) *executor.Program {
	t.Helper()
	dev := simdev.New(simdev.Options{})
	t.Cleanup(func() { dev.Close() })
	prog, err := executor.Load(dev, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	if err := prog.SetParams(params); err != nil {
		t.Fatal(err)
	}
	return prog
}
