// Command demo is what `make demo` runs: it loads every example model the way gcomp does,
// compiles it to PTX (bin/examples/NAME.ptx and NAME.plan.json, as `gcomp build` writes them),
// runs the compiled kernels on the PTX simulator with memcheck and racecheck on and compares them
// with the reference interpreter (what `gcomp check` does), and compares the reference outputs
// with PyTorch's for the same weights and inputs (testdata/torch). A second column group does the
// same with every kernel the NVVM producer has a template for written by it (libNVVM) and the
// others by codegen/ptx, naming the templates it refused.
package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvrtc"
	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

func main() {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "model\tparams\tops\tkernels (eager)\tarena KiB\tPTX KiB\tload ms\tbuild ms\tsim ms\tref ms\tsim err/tol\tcheck\tmax |ref − PyTorch|\tnvvm kernels\tnvvm check\tnvvm refused\t")
	failed := false
	names := []string{}
	for _, ex := range examples.Tutorials {
		names = append(names, ex.Name)
	}
	for _, name := range append(names, customExamples...) {
		row, err := runExample(name, &failed)
		if errors.Is(err, nvrtc.ErrNoLibrary) {
			fmt.Fprintf(os.Stderr, "demo: %s skipped: its CUDA C needs NVRTC (sh scripts/fetch-cuda-tools.sh --nvrtc)\n", name)
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "demo: %s: %v\n", name, err)
			failed = true
			continue
		}
		fmt.Fprintln(w, row)
	}
	w.Flush()
	fmt.Println(`
ops: graph nodes from the DSL; kernels: after fusion (one per op without it); arena: the planned
device memory for intermediates; PTX: the module written to bin/examples; sim: the compiled kernels
on the PTX simulator with memcheck, racecheck and synccheck; ref: the reference interpreter;
err/tol: the worst element's error over its tolerance; check: every output within tolerance of the
reference (what gcomp check does); PyTorch: float64 outputs of the same module definitions for the
same weights (scripts/torch_reference.sh). nvvm: the same build with every kernel the NVVM producer
has a template for compiled by libNVVM (kernels: those / all), checked the same way; refused: the
templates without an NVVM counterpart yet, with their kernel counts.`)
	if failed {
		os.Exit(1)
	}
}

// customExamples have a CUDA kernel of their own (NVRTC compiles it) and no PyTorch reference.
var customExamples = []string{"swish"}

// outDir is where the compiled examples go (ignored by git).
const outDir = "bin/examples"

func runExample(name string, failed *bool) (string, error) {
	path := filepath.Join("examples", name, "model.go")
	start := time.Now()
	g, err := load.File(path, load.Options{})
	if err != nil {
		return "", err
	}
	loadTime := time.Since(start)
	start = time.Now()
	compiled, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		return "", err
	}
	buildTime := time.Since(start)
	art := compiled.Artifact
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	if err := art.Write(filepath.Join(outDir, name+".ptx")); err != nil {
		return "", err
	}
	inputs, params, err := tensor.SeededValues(g, 0)
	if err != nil {
		return "", err
	}
	nparams := 0
	for _, x := range params {
		nparams += x.Len()
	}
	rep, err := check.Run(art, inputs, params)
	if err != nil {
		return "", err
	}
	start = time.Now()
	outs, err := ref.Run(g, inputs, params)
	if err != nil {
		return "", err
	}
	runTime := time.Since(start)
	status, simRel := "ok", 0.0
	for _, o := range rep.Outputs {
		simRel = math.Max(simRel, o.Worst)
		if !o.Pass() {
			status = "FAIL " + o.First
			*failed = true
		}
	}
	worst := 0.0
	for _, o := range g.Outputs {
		if slices.Contains(customExamples, name) {
			worst = math.NaN() // no PyTorch reference: printed as "-"
			break
		}
		want, err := tensor.ReadNPYFile(filepath.Join("testdata", "torch", name, o.Name+".npy"))
		if err != nil {
			return "", fmt.Errorf("no PyTorch reference: %v", err)
		}
		for i := range want.F {
			worst = math.Max(worst, math.Abs(outs[o.Name].At(i)-want.F[i]))
		}
	}
	ops := len(g.Values) - len(g.Inputs()) - len(g.Params())
	st := compiled.Passes.Stats
	nvKernels, nvStatus, nvRefused := nvvmColumns(g, inputs, params, failed)
	return fmt.Sprintf("%s\t%d\t%d\t%d (%d)\t%d\t%d\t%.0f\t%.0f\t%.0f\t%.1f\t%.2f\t%s\t%s\t%s\t%s\t%s\t", name, nparams, ops, st.Kernels, st.EagerKernels,
		st.ArenaBytes/1024, len(art.PTX)/1024, ms(loadTime), ms(buildTime), ms(rep.SimTime), ms(runTime), simRel, status, torchColumn(worst),
		nvKernels, nvStatus, nvRefused), nil
}

var refusedTemplate = regexp.MustCompile(`the (.+?) template has no NVVM counterpart`)

// nvvmColumns builds g with the NVVM producer wherever it has a template (codegen/ptx for the
// rest), checks it as the first columns do, and returns the kernels it wrote (of all), the check
// and the refused templates. Without libNVVM the columns are "-".
func nvvmColumns(g *ir.Graph, inputs, params map[string]*tensor.Tensor, failed *bool) (kernels, status, refused string) {
	auto := &backend.Auto{NVVM: &nvvm.Producer{}, PreferNVVM: true}
	if _, err := auto.NVVM.Lib(); errors.Is(err, libnvvm.ErrNoLibrary) {
		return "-", "-", "no libNVVM"
	}
	compiled, err := compiler.Compile(g, compiler.Options{Producer: auto})
	if err != nil {
		*failed = true
		return "-", "FAIL " + err.Error(), ""
	}
	rep, err := check.Run(compiled.Artifact, inputs, params)
	if err != nil {
		*failed = true
		return "-", "FAIL " + err.Error(), ""
	}
	status = "ok"
	for _, o := range rep.Outputs {
		if !o.Pass() {
			status = "FAIL " + o.First
			*failed = true
		}
	}
	byNVVM, all := 0, 0
	for _, k := range compiled.Artifact.Plan.Kernels {
		if k.Producer != "" {
			all++
		}
		if k.Producer == "nvvm" {
			byNVVM++
		}
	}
	count := map[string]int{}
	var templates []string
	for _, c := range auto.Choices {
		if m := refusedTemplate.FindStringSubmatch(c.Why); m != nil && c.Producer == "ptx" {
			if count[m[1]] == 0 {
				templates = append(templates, m[1])
			}
			count[m[1]]++
		}
	}
	var parts []string
	for _, tpl := range templates {
		parts = append(parts, fmt.Sprintf("%s ×%d", tpl, count[tpl]))
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	return fmt.Sprintf("%d/%d", byNVVM, all), status, strings.Join(parts, ", ")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func torchColumn(worst float64) string {
	if math.IsNaN(worst) {
		return "-"
	}
	return fmt.Sprintf("%.1e", worst)
}
