package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/device"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	mf := addModelFlags(fs)
	tf := addTargetFlags(fs)
	dev := fs.String("device", "ref", "where to run: ref (the reference interpreter on the source graph), sim (the compiled kernels on the PTX simulator), cuda:N (GPU N; cuda is cuda:0) or auto (the first usable GPU, else sim)")
	cudaLib := fs.String("cuda-lib", "", "the CUDA driver library to load (default $"+cuda.LibraryEnv+", else "+cuda.DefaultLibrary+")")
	noCheck := fs.Bool("no-check", false, "sim: skip memcheck, racecheck and synccheck (faster)")
	graphs := fs.Bool("cuda-graphs", true, "with --bench on a GPU, record the kernels of a run once as a CUDA graph and replay it for the timed runs (one launch per run; per-kernel times need --cuda-graphs=false)")
	bench := fs.Int("bench", 0, "after one warm-up run, time N runs and print the median and minimum per run and per kernel (compiled devices; CUDA events on a GPU)")
	vf := addValueFlags(fs)
	outDir := fs.String("output-dir", "", "directory to write each output to as NAME.npy")
	saveInputs := fs.Bool("save-inputs", false, "also write the inputs used (given or random) to DIR/inputs/NAME.npy")
	path, err := parseModelArgs(fs, args, stdout, "MODEL|model.ptx --device ref|sim|cuda:N|auto [--weights W.safetensors] [--input NAME=FILE.npy]... --output-dir DIR")
	if err != nil {
		return err
	}
	if *outDir == "" {
		return fmt.Errorf("gcomp run: --output-dir is required")
	}
	if err := checkOutputDir(*outDir); err != nil {
		return err
	}
	spec, err := device.Parse(*dev)
	if err != nil {
		return fmt.Errorf("gcomp run: %v", err)
	}
	if *bench < 0 || (*bench > 0 && spec.Kind == device.Ref) {
		return fmt.Errorf("gcomp run: --bench wants N > 0 and a compiled device (--device sim, cuda:N or auto)")
	}
	target, err := tf.get()
	if err != nil {
		return fmt.Errorf("gcomp run: %v", err)
	}
	// The device opens first: a missing GPU is the first thing to hear of.
	var sel *device.Selected
	if spec.Kind != device.Ref {
		if sel, err = openCompiledDevice(*dev, *cudaLib, *noCheck, stderr); err != nil {
			return fmt.Errorf("gcomp run: %v", err)
		}
		defer sel.Device.Close()
	}
	g, art, err := loadRunnable(path, mf, target, sel != nil)
	if err != nil {
		return err
	}
	in, params, err := vf.bind(g, stderr)
	if err != nil {
		return err
	}
	var outs map[string]*tensor.Tensor
	if sel == nil {
		outs, err = ref.Run(g, in, params)
	} else {
		outs, err = runCompiled(sel, art, in, params, *bench, *graphs, stdout)
	}
	if err != nil {
		return fmt.Errorf("gcomp run: %s", prefixPath(path, err))
	}
	files := map[string]*tensorio.Array{}
	for name, t := range outs {
		files[name+".npy"] = npyArray(name, t, stderr)
	}
	if *saveInputs {
		for name, t := range in {
			files[filepath.Join("inputs", name+".npy")] = npyArray(name, t, stderr)
		}
	}
	return writeNPYFiles(*outDir, files)
}

// npyArray is t as a NumPy file can hold it: NumPy has no bfloat16, so a bf16 tensor widens to
// f32, which holds every bf16 value exactly (torch.from_numpy(a).bfloat16() gives it back).
func npyArray(name string, t *tensor.Tensor, stderr io.Writer) *tensorio.Array {
	if t.Type.DType != ir.BF16 {
		return t.Array()
	}
	fmt.Fprintf(stderr, "gcomp: %s is %s, which NumPy lacks: written as f32 (exactly)\n", name, t.Type)
	return tensor.FromFloats(ir.Type{DType: ir.F32, Shape: t.Type.Shape}, t.F).Array()
}

// prefixPath puts the model's path before err's message unless the message starts with it
// already (errors positioned in the model do: "model.go:83: ...").
func prefixPath(path string, err error) string {
	if msg := err.Error(); strings.HasPrefix(msg, path+":") {
		return msg
	}
	return path + ": " + err.Error()
}

// loadRunnable loads a model for running: a compiled module (model.ptx with
// model.plan.json beside it) brings its source graph along; a .go or .gir
// model is compiled in memory when compile is set.
func loadRunnable(path string, mf modelFlags, target ptx.Target, compile bool) (*ir.Graph, *artifact.Artifact, error) {
	if strings.HasSuffix(path, ".ptx") {
		art, err := artifact.Read(path)
		if err != nil {
			return nil, nil, fmt.Errorf("gcomp: %v", err)
		}
		g, err := art.Plan.SourceGraph()
		if err != nil {
			return nil, nil, fmt.Errorf("gcomp: %s: %v", artifact.PlanPath(path), err)
		}
		return g, art, nil
	}
	g, err := mf.load(path)
	if err != nil || !compile {
		return g, nil, err
	}
	res, err := compiler.Compile(g, compiler.Options{Target: target})
	if err != nil {
		return nil, nil, fmt.Errorf("gcomp: %s: %v", path, err)
	}
	return g, res.Artifact, nil
}

// testDriver, when a test sets it, replaces the CUDA driver library (with the simulator-backed
// driver, say), so that the CUDA device's code path runs without a GPU.
var testDriver cuda.Driver

// openCompiledDevice opens the device name selects (auto, cuda:N or sim); when auto falls back to
// the simulator it says why on stderr, as the first line of output a user sees.
func openCompiledDevice(name, cudaLib string, noCheck bool, stderr io.Writer) (*device.Selected, error) {
	sel, err := device.Open(name, device.Options{
		CUDALib: cudaLib,
		Driver:  testDriver,
		Sim:     func() (executor.Device, error) { return simdev.New(simdev.Options{NoCheck: noCheck}), nil },
	})
	if err != nil {
		return nil, err
	}
	if sel.Fallback != "" {
		fmt.Fprintf(stderr, "gcomp: no usable GPU (%s): running on the PTX simulator\n", sel.Fallback)
	}
	return sel, nil
}

// runCompiled runs a compiled model on the selected device and returns its outputs by the graph's
// output names; with bench > 0 it times that many further runs (kernels timed by CUDA events on a
// GPU, by the simulator's clock on sim) and prints the report to w.
func runCompiled(sel *device.Selected, art *artifact.Artifact, in, params map[string]*tensor.Tensor, bench int, graphs bool, w io.Writer) (map[string]*tensor.Tensor, error) {
	dev := sel.Device
	prog, err := executor.Load(dev, art)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	if err := prog.SetParams(params); err != nil {
		return nil, err
	}
	res, err := prog.Run(in)
	if err != nil {
		return nil, err
	}
	if bench > 0 {
		clock := "simulated time: the simulator's wall clock, not a GPU's"
		if graphs && prog.UseGraphs(true) {
			clock = "runs replaying one CUDA graph, host clock; per-kernel times need --cuda-graphs=false"
		} else if p, ok := dev.(interface{ SetProfile(bool) }); ok && sel.Spec.Kind == device.CUDA {
			p.SetProfile(true)
			defer p.SetProfile(false)
			clock = "kernel times from CUDA events"
		}
		b, err := executor.Bench(prog, in, bench)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "%s on %s: %d runs after 1 warm-up (%s)\n\n", art.Plan.Model, dev.Name(), bench, clock)
		b.WriteTable(w)
	}
	return res.Outputs, nil
}

// valueFlags say where a run's weights and inputs come from.
type valueFlags struct {
	weights *string
	strict  *bool
	inputs  *multiFlag
	seed    *uint64
}

func addValueFlags(fs *flag.FlagSet) valueFlags {
	vf := valueFlags{inputs: &multiFlag{}}
	vf.weights = fs.String("weights", "", "safetensors file with the parameters (missing ones use the model's initializers)")
	vf.strict = fs.Bool("strict", false, "require --weights to hold every parameter")
	fs.Var(vf.inputs, "input", "NAME=FILE.npy: an input's value (repeatable); inputs not given get seeded random data")
	vf.seed = fs.Uint64("seed", 0, "seed for random inputs and initial weights")
	return vf
}

// bind reads or makes every input and parameter of g; notes go to stderr.
func (vf valueFlags) bind(g *ir.Graph, stderr io.Writer) (inputs, params map[string]*tensor.Tensor, err error) {
	if params, err = bindParams(g, *vf.weights, *vf.strict, *vf.seed, stderr); err != nil {
		return nil, nil, err
	}
	if inputs, err = bindInputs(g, *vf.inputs, *vf.seed, stderr); err != nil {
		return nil, nil, err
	}
	return inputs, params, nil
}

func bindInputs(g *ir.Graph, specs []string, seed uint64, stderr io.Writer) (map[string]*tensor.Tensor, error) {
	in := map[string]*tensor.Tensor{}
	for _, spec := range specs {
		name, file, ok := strings.Cut(spec, "=")
		if !ok || name == "" || file == "" {
			return nil, fmt.Errorf("gcomp run: --input %q: want NAME=FILE.npy", spec)
		}
		v := g.Lookup(name)
		if v == nil || v.Op != ir.OpInput {
			return nil, fmt.Errorf("gcomp run: --input %s: the model has no input %q (inputs: %s)", spec, name, valueNames(g.Inputs()))
		}
		if in[name] != nil {
			return nil, fmt.Errorf("gcomp run: input %s given twice", name)
		}
		a, err := tensorio.ReadNPYFile(file)
		if err != nil {
			return nil, err
		}
		t, err := tensor.FromArray(a)
		if err != nil {
			return nil, fmt.Errorf("gcomp run: %s: %v", file, err)
		}
		if !t.Type.Equal(v.Type) {
			return nil, fmt.Errorf("gcomp run: input %s: %s holds %s, the model wants %s", name, file, t.Type, v.Type)
		}
		in[name] = t
	}
	for _, v := range g.Inputs() {
		if in[v.Name] == nil {
			in[v.Name] = tensor.RandomInput(v, seed)
			fmt.Fprintf(stderr, "gcomp: input %s not given: using seeded random %s (seed %d)\n", v.Name, v.Type, seed)
		}
	}
	return in, nil
}

func bindParams(g *ir.Graph, weights string, strict bool, seed uint64, stderr io.Writer) (map[string]*tensor.Tensor, error) {
	var file map[string]*tensorio.Array
	if weights != "" {
		var err error
		if file, _, err = tensorio.ReadSafetensorsFile(weights); err != nil {
			return nil, err
		}
	}
	params := map[string]*tensor.Tensor{}
	var initialized []string
	for _, p := range g.Params() {
		a, ok := file[p.Name]
		if !ok {
			if strict {
				return nil, fmt.Errorf("gcomp: %s has no tensor %s (%s) and --strict is set", weights, p.Name, p.Type)
			}
			t, err := tensor.Initialize(p, seed)
			if err != nil {
				return nil, err
			}
			params[p.Name] = t
			initialized = append(initialized, p.Name)
			continue
		}
		t, err := tensor.FromArray(a)
		if err != nil {
			return nil, fmt.Errorf("gcomp: %s: tensor %s: %v", weights, p.Name, err)
		}
		if !t.Type.Equal(p.Type) {
			return nil, fmt.Errorf("gcomp: %s: tensor %s is %s, the model wants %s", weights, p.Name, t.Type, p.Type)
		}
		params[p.Name] = t
	}
	var unknown, tied []string
	for name, a := range file {
		if v := g.Lookup(name); v != nil && v.Op == ir.OpParam {
			continue
		}
		if p := tiedTo(a, file, params); p != "" {
			tied = append(tied, fmt.Sprintf("%s (a copy of %s)", name, p))
			continue
		}
		unknown = append(unknown, name)
	}
	if len(tied) > 0 {
		sort.Strings(tied)
		fmt.Fprintf(stderr, "gcomp: %s: ignoring tied weights: %s\n", weights, strings.Join(tied, ", "))
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("gcomp: %s has tensors the model does not declare: %s (model parameters: %s)", weights, strings.Join(unknown, ", "), valueNames(g.Params()))
	}
	if weights != "" && len(initialized) > 0 {
		fmt.Fprintf(stderr, "gcomp: %d parameters not in %s use their initializers (seed %d): %s\n", len(initialized), weights, seed, strings.Join(initialized, ", "))
	}
	return params, nil
}

// tiedTo names the model parameter that a holds a byte-identical copy of, read from the same
// file: a tied weight saved under both of its state_dict names, as nanoGPT's lm_head.weight and
// transformer.wte.weight are. It returns "" when there is none.
func tiedTo(a *tensorio.Array, file map[string]*tensorio.Array, params map[string]*tensor.Tensor) string {
	var names []string
	for name, b := range file {
		if params[name] != nil && b.DType == a.DType && slices.Equal(b.Shape, a.Shape) && bytes.Equal(b.Data, a.Data) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return slices.Min(names)
}

func valueNames(vs []*ir.Value) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// checkOutputDir fails early, before any work, when an output directory cannot be made: its
// parent must exist (the directory itself is created only when the outputs are ready).
func checkOutputDir(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return fmt.Errorf("gcomp: cannot write %s: directory %s does not exist", dir, parent)
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("gcomp: cannot write to %s: it is a file, not a directory", dir)
	}
	return nil
}

// writeNPYFiles writes every file into dir, or none: all are written under a temporary directory
// beside dir first, and dir is created and the files renamed into it only when every write
// succeeded. Errors name the files as the user will know them (dir/NAME.npy).
func writeNPYFiles(dir string, files map[string]*tensorio.Array) error {
	if err := checkOutputDir(dir); err != nil {
		return err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	tmp, err := os.MkdirTemp(parent, ".gcomp-out-*")
	if err != nil {
		return fmt.Errorf("gcomp: cannot write to %s: %v", parent, err)
	}
	defer os.RemoveAll(tmp)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("gcomp: %v", err)
		}
		if err := tensorio.WriteNPYFile(path, files[name]); err != nil {
			return fmt.Errorf("gcomp: %s: %v", filepath.Join(dir, name), strings.ReplaceAll(err.Error(), path+": ", ""))
		}
	}
	for _, name := range names {
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("gcomp: cannot create output directory: %v", err)
		}
		if err := os.Rename(filepath.Join(tmp, name), dst); err != nil {
			return fmt.Errorf("gcomp: %v", err)
		}
	}
	return nil
}

func cmdInitWeights(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init-weights", flag.ContinueOnError)
	mf := addModelFlags(fs)
	out := fs.String("o", "", "the safetensors file to write")
	seed := fs.Uint64("seed", 0, "seed for the initializers")
	path, err := parseModelArgs(fs, args, stdout, "MODEL -o W.safetensors [--seed N]")
	if err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("gcomp init-weights: -o FILE is required")
	}
	g, err := mf.load(path)
	if err != nil {
		return err
	}
	params, err := bindParams(g, "", false, *seed, stderr)
	if err != nil {
		return err
	}
	arrays := map[string]*tensorio.Array{}
	for name, t := range params {
		arrays[name] = t.Array()
	}
	return tensorio.WriteSafetensorsFile(*out, arrays, map[string]string{"format": "pt"})
}
