// Command demo is what `make demo` runs: it loads every example model the way gcomp does,
// runs it on the reference interpreter with the seeded initial weights and random inputs, and
// compares the outputs with PyTorch's for the same weights and inputs (testdata/torch).
package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

var examples = []string{"linreg", "mlp", "cnn", "rnn", "lstm", "transformer", "gpt"}

func main() {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "model\tparams\tops\tkernels (eager)\tarena KiB\tinputs\toutputs\tload ms\tref ms\tmax |ref − PyTorch|\t")
	failed := false
	for _, name := range examples {
		row, err := runExample(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "demo: %s: %v\n", name, err)
			failed = true
			continue
		}
		fmt.Fprintln(w, row)
	}
	w.Flush()
	fmt.Println("\nops: graph nodes from the DSL; kernels: after fusion (one per op without it); arena: the planned device")
	fmt.Println("memory for intermediates; ref: the reference interpreter on all cores; PyTorch: float64 outputs of the")
	fmt.Println("same module definitions for the same weights (scripts/torch_reference.sh).")
	if failed {
		os.Exit(1)
	}
}

func runExample(name string) (string, error) {
	path := filepath.Join("examples", name, "model.go")
	start := time.Now()
	g, err := load.File(path, load.Options{})
	if err != nil {
		return "", err
	}
	loadTime := time.Since(start)
	compiled, err := passes.Run(g, passes.Options{})
	if err != nil {
		return "", err
	}
	params := map[string]*tensor.Tensor{}
	nparams := 0
	for _, p := range g.Params() {
		x, err := tensor.Initialize(p, 0)
		if err != nil {
			return "", err
		}
		params[p.Name] = x
		nparams += x.Len()
	}
	inputs := map[string]*tensor.Tensor{}
	for _, v := range g.Inputs() {
		inputs[v.Name] = tensor.RandomInput(v, 0)
	}
	start = time.Now()
	outs, err := ref.Run(g, inputs, params)
	if err != nil {
		return "", err
	}
	runTime := time.Since(start)
	worst := 0.0
	for _, o := range g.Outputs {
		a, err := tensorio.ReadNPYFile(filepath.Join("testdata", "torch", name, o.Name+".npy"))
		if err != nil {
			return "", fmt.Errorf("no PyTorch reference: %v", err)
		}
		want, err := tensor.FromArray(a)
		if err != nil {
			return "", err
		}
		for i := range want.F {
			worst = math.Max(worst, math.Abs(outs[o.Name].At(i)-want.F[i]))
		}
	}
	ops := len(g.Values) - len(g.Inputs()) - len(g.Params())
	st := compiled.Stats
	return fmt.Sprintf("%s\t%d\t%d\t%d (%d)\t%d\t%s\t%s\t%.1f\t%.1f\t%.1e\t", name, nparams, ops, st.Kernels, st.EagerKernels,
		st.ArenaBytes/1024, types(g.Inputs()), outTypes(g), ms(loadTime), ms(runTime), worst), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func types(vs []*ir.Value) string {
	var s []string
	for _, v := range vs {
		s = append(s, v.Name+" "+v.Type.String())
	}
	return strings.Join(s, ", ")
}

func outTypes(g *ir.Graph) string {
	var s []string
	for _, o := range g.Outputs {
		s = append(s, o.Name+" "+o.Value.Type.String())
	}
	return strings.Join(s, ", ")
}
