package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/passes"
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
	mf := addBatchedModelFlags(fs)
	tf := addTargetFlags(fs)
	dev := fs.String("device", "ref", "where to run: ref (the reference interpreter on the source graph), sim (the compiled kernels on the PTX simulator), cuda:N (GPU N; cuda is cuda:0), auto (the first usable GPU, else sim), or a list cuda:0,cuda:1 or sim:0,sim:1 (the batch split across them)")
	cudaLib := fs.String("cuda-lib", "", "the CUDA driver library to load (default $"+cuda.LibraryEnv+", else "+cuda.DefaultLibrary+")")
	noCheck := fs.Bool("no-check", false, "sim: skip memcheck, racecheck and synccheck (faster)")
	graphs := fs.Bool("cuda-graphs", true, "with --bench on a GPU, record the kernels of a run once as a CUDA graph and replay it for the timed runs (one launch per run; per-kernel times need --cuda-graphs=false)")
	bench := fs.Int("bench", 0, "after one warm-up run, time N runs and print the median and minimum per run and per kernel (compiled devices; CUDA events on a GPU)")
	vf := addValueFlags(fs)
	outDir := fs.String("output-dir", "", "directory to write each output to as NAME.npy (without it each output is printed to stdout, NumPy-style)")
	saveInputs := fs.Bool("save-inputs", false, "also write the inputs used (given or random) to DIR/inputs/NAME.npy")
	path, err := parseModelArgs(fs, args, stdout, "MODEL|model.ptx [--device ref|sim|cuda:N|auto] [--weights W.safetensors] [--input NAME=FILE.npy]... [--output-dir DIR]")
	if err != nil {
		return err
	}
	if *outDir == "" && *saveInputs {
		return fmt.Errorf("gcomp run: --save-inputs writes into --output-dir DIR: give one")
	}
	if err := checkOutputDir(*outDir); *outDir != "" && err != nil {
		return err
	}
	if parallelDevices(*dev) {
		if *bench > 0 {
			return fmt.Errorf("gcomp run: --bench times one device; give one --device")
		}
		in, outs, files, err := runParallel(path, *dev, mf, tf, vf, *cudaLib, *noCheck, *outDir, *saveInputs, stderr)
		if err != nil {
			return err
		}
		return finishRun(stdout, stderr, *outDir, in, outs, files)
	}
	spec, err := device.Parse(*dev)
	if err != nil {
		return fmt.Errorf("gcomp run: %v", err)
	}
	if *bench < 0 || (*bench > 0 && spec.Kind == device.Ref) {
		return fmt.Errorf("gcomp run: --bench wants N > 0 and a compiled device (--device sim, cuda:N or auto)")
	}
	copt, err := tf.options()
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
	m, art, err := loadRunnable(path, mf, copt, sel != nil)
	if err != nil {
		return err
	}
	g := m.Graph
	// The outputs' files are known now: check them all before any work.
	files := newRunFiles(g, m.Names, *saveInputs)
	if err := checkNPYFiles(*outDir, files.names); *outDir != "" && err != nil {
		return fmt.Errorf("gcomp run: %s: %v", path, err)
	}
	ref.SetMemoryBudget(int64(*vf.refMemory))
	if sel == nil {
		// The parameters count against the budget before they are converted to float64.
		if err := ref.CheckBound(g); err != nil {
			return fmt.Errorf("gcomp run: %s", prefixPath(path, err))
		}
	}
	in, params, err := vf.bind(m, stderr)
	if err != nil {
		return err
	}
	var outs map[string]*tensor.Tensor
	if sel == nil {
		// The default device stays ref (docs/runtime.md), which runs a module's source graph, not
		// its kernels: said, so that no one takes ref's numbers for the kernels'.
		if !mf.isGiven("device") && strings.HasSuffix(path, ".ptx") {
			fmt.Fprintf(stderr, "gcomp: no --device: running %s's source graph on the reference interpreter; --device auto runs its kernels (the first usable GPU, else the PTX simulator)\n", path)
		}
		outs, err = ref.Run(g, in, params)
	} else {
		outs, err = runCompiled(sel, art, in, params, *bench, *graphs, stdout)
	}
	if err != nil {
		return fmt.Errorf("gcomp run: %s", prefixPath(path, err))
	}
	return finishRun(stdout, stderr, *outDir, in, outs, files)
}

// finishRun hands a run's outputs to the user: into dir as .npy files, or, without a dir,
// printed to stdout.
func finishRun(stdout, stderr io.Writer, dir string, in, outs map[string]*tensor.Tensor, f runFiles) error {
	if dir == "" {
		printOutputs(stdout, outs, f)
		return nil
	}
	return writeRunOutputs(dir, in, outs, f, stderr)
}

// writeRunOutputs writes each output to DIR/NAME.npy and, with --save-inputs, each input to
// DIR/inputs/NAME.npy, where f says.
func writeRunOutputs(dir string, in, outs map[string]*tensor.Tensor, f runFiles, stderr io.Writer) error {
	files := map[string]*tensorio.Array{}
	for name, t := range outs {
		files[f.outs[name]] = npyArray(name, t, stderr)
	}
	if len(f.ins) > 0 {
		for name, t := range in {
			files[f.ins[name]] = npyArray(name, t, stderr)
		}
	}
	if err := writeNPYFiles(dir, files); err != nil {
		return err
	}
	f.report(dir, stderr)
	return nil
}

// npyArray is t as a NumPy file can hold it: NumPy has no bfloat16 and no fp8, so a bf16, f8e4m3
// or f8e5m2 tensor widens to f32, which holds every value of theirs exactly
// (torch.from_numpy(a).bfloat16() gives it back).
func npyArray(name string, t *tensor.Tensor, stderr io.Writer) *tensorio.Array {
	if d := t.Type.DType; d != ir.BF16 && !d.IsFP8() {
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
func loadRunnable(path string, mf modelFlags, copt compiler.Options, compile bool) (*load.Model, *artifact.Artifact, error) {
	if strings.HasSuffix(path, ".ptx") {
		art, err := artifact.Read(path)
		var plan *artifact.Plan
		if err == nil {
			plan = art.Plan
		}
		if ferr := moduleShapeFlags(path, mf, plan); ferr != nil { // the flags first, as before any read
			return nil, nil, ferr
		}
		if err != nil {
			return nil, nil, fmt.Errorf("gcomp: %v", err)
		}
		// The module was compiled with or without autocast; --amp, if given, must say the same.
		if copt.AMP != ir.Invalid && copt.AMP.String() != art.Plan.AMP {
			return nil, nil, fmt.Errorf("gcomp: %s: --amp %s: the module was built %s (build it again with --amp %s)", path, copt.AMP, ampBuilt(art.Plan.AMP), copt.AMP)
		}
		g, err := art.Plan.SourceGraph()
		if err != nil {
			return nil, nil, fmt.Errorf("gcomp: %s: %v", artifact.PlanPath(path), err)
		}
		return &load.Model{Graph: g, Names: namesOfPlan(art.Plan.SourceNames)}, art, nil
	}
	m, err := mf.loadModel(path, false)
	if err != nil {
		return nil, nil, err
	}
	// The reference interpreter runs the autocast graph too, so ref and the kernels agree.
	m.Graph = passes.AutocastGraph(m.Graph, copt.AMP)
	if !compile {
		return m, nil, nil
	}
	res, err := compiler.Compile(m.Graph, copt)
	if err != nil {
		return nil, nil, fmt.Errorf("gcomp: %s: %v", path, err)
	}
	return m, res.Artifact, nil
}

// moduleShapeFlags refuses the flags that shape a model as it is traced or imported (--batch,
// --max-batch, --shape, --max-shape, --const): a compiled module's shapes and dims were chosen when it was
// built, and a run that ignored them would not be the run the user asked for. plan is nil when
// the module could not be read.
func moduleShapeFlags(path string, mf modelFlags, plan *artifact.Plan) error {
	built, again := "", "build it again with "
	if plan != nil && len(plan.Dims) > 0 {
		built, again = " (it runs "+artifact.RangesString(plan.Dims)+", at the sizes of its inputs)", "give inputs of the sizes to run, or build it again with "
	} else if plan != nil {
		built = " (its shapes are static)"
	}
	if (plan == nil || len(plan.Dims) == 0) && mf.batch != nil && *mf.batch != 0 {
		return fmt.Errorf("gcomp: %s: --batch: a compiled module is fixed at the batch it was built at (build it with --batch)", path)
	}
	for _, f := range []struct {
		name  string
		given bool
	}{
		{"--batch", mf.batch != nil && *mf.batch != 0},
		{"--max-batch", mf.maxB != nil && *mf.maxB != 0},
		{"--shape", len(*mf.onnx.shapes) > 0},
		{"--max-shape", len(*mf.onnx.maxShapes) > 0},
		{"--const", len(*mf.onnx.consts) > 0},
	} {
		if f.given {
			return fmt.Errorf("gcomp: %s: %s: a compiled module's sizes were chosen when it was built%s: %s%s", path, f.name, built, again, f.name)
		}
	}
	return nil
}

// ampBuilt says how a plan's module was built: "with --amp bf16" or "without --amp".
func ampBuilt(amp string) string {
	if amp == "" {
		return "without --amp"
	}
	return "with --amp " + amp
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
	// refMemory is the reference interpreter's memory budget (--ref-memory).
	refMemory *byteSize
}

func addValueFlags(fs *flag.FlagSet) valueFlags {
	vf := valueFlags{inputs: &multiFlag{}}
	vf.weights = fs.String("weights", "", "safetensors file with the parameters (missing ones use the model's initializers)")
	vf.strict = fs.Bool("strict", false, "require --weights to hold every parameter")
	fs.Var(vf.inputs, "input", "NAME=FILE.npy: an input's value (repeatable); inputs not given get seeded random data")
	vf.seed = fs.Uint64("seed", 0, "seed for random inputs and initial weights")
	mem := defaultRefMemory()
	vf.refMemory = &mem
	fs.Var(vf.refMemory, "ref-memory", "the most memory the reference interpreter may hold in values, in bytes (or 512MiB, 8GiB; default half the tightest of the physical memory, ulimit -v and the cgroup limit)")
	return vf
}

// bind reads or makes every input and parameter of m's graph; notes go to stderr.
func (vf valueFlags) bind(m *load.Model, stderr io.Writer) (inputs, params map[string]*tensor.Tensor, err error) {
	ref.SetMemoryBudget(int64(*vf.refMemory))
	if params, err = bindParams(m, *vf.weights, *vf.strict, *vf.seed, stderr); err != nil {
		return nil, nil, err
	}
	if inputs, err = bindInputs(m, *vf.inputs, *vf.seed, stderr); err != nil {
		return nil, nil, err
	}
	return inputs, params, nil
}

// bindInputs reads the --input values, by the names m's file gives its inputs, and makes seeded
// random values for the inputs not given; the result is keyed by the graph's names.
func bindInputs(m *load.Model, specs []string, seed uint64, stderr io.Writer) (map[string]*tensor.Tensor, error) {
	g, names := m.Graph, m.Names
	in := map[string]*tensor.Tensor{}
	for _, spec := range specs {
		name, file, ok := strings.Cut(spec, "=")
		if !ok || name == "" || file == "" {
			return nil, fmt.Errorf("gcomp run: --input %q: want NAME=FILE.npy", spec)
		}
		v, err := lookupInput(g, names, name)
		if err != nil {
			return nil, fmt.Errorf("gcomp run: --input %s: %v", spec, err)
		}
		if in[v.Name] != nil {
			return nil, fmt.Errorf("gcomp run: input %s given twice", name)
		}
		t, err := load.ReadTensorFile(file) // .npy, or an ONNX TensorProto .pb
		if err != nil {
			return nil, fmt.Errorf("gcomp run: %v", err)
		}
		// A symbolic input takes any sizes in its dims' ranges; running binds and checks them.
		if sym := v.Type.Sym != nil; !sym && !t.Type.Equal(v.Type) ||
			sym && (t.Type.DType != v.Type.DType || len(t.Type.Shape) != len(v.Type.Shape)) {
			return nil, fmt.Errorf("gcomp run: input %s: %s holds %s, the model wants %s", name, file, t.Type, v.Type)
		}
		in[v.Name] = t
	}
	for _, v := range g.Inputs() {
		if in[v.Name] == nil {
			in[v.Name] = tensor.RandomInput(v, seed)
			fmt.Fprintf(stderr, "gcomp: input %s not given: using seeded random %s (seed %d)\n", inputName(names, v), v.Type, seed)
		}
	}
	return in, nil
}

// bindParams binds m's parameters: from the weights file, else the model's own weights (an
// .onnx model's), else its initializers.
func bindParams(m *load.Model, weights string, strict bool, seed uint64, stderr io.Writer) (map[string]*tensor.Tensor, error) {
	g := m.Graph
	var file map[string]*tensorio.Array
	if weights != "" {
		var err error
		if file, _, err = tensorio.ReadSafetensorsFile(weights); err != nil {
			return nil, err
		}
	}
	params := map[string]*tensor.Tensor{}
	var initialized, missing []string
	for _, p := range g.Params() {
		a, ok := file[p.Name]
		if !ok {
			w, err := m.Weights.Tensor(p.Name) // converted one at a time, as they are needed
			if err != nil {
				return nil, fmt.Errorf("gcomp: %s: %v", g.File, err)
			}
			if w != nil {
				params[p.Name] = w
				continue
			}
		}
		if !ok {
			if strict {
				missing = append(missing, fmt.Sprintf("%s (%s)", p.Name, p.Type))
				continue
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
	copies := paramCopies(file, params)
	for name, a := range file {
		if v := g.Lookup(name); v != nil && v.Op == ir.OpParam {
			continue
		}
		if p := copies[contentKey(a)]; p != "" {
			tied = append(tied, fmt.Sprintf("%s (a copy of %s)", name, p))
			continue
		}
		unknown = append(unknown, name)
	}
	sort.Strings(unknown)
	if len(missing) > 0 {
		return nil, strictError(weights, missing, unknown)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("gcomp: %s has tensors the model does not declare: %s (model parameters: %s)", weights, listNames(unknown), valueNames(g.Params()))
	}
	if len(tied) > 0 {
		sort.Strings(tied)
		fmt.Fprintf(stderr, "gcomp: %s: ignoring tied weights: %s\n", weights, listNames(tied))
	}
	if weights != "" && len(initialized) > 0 {
		fmt.Fprintf(stderr, "gcomp: %d parameters not in %s use their initializers (seed %d): %s\n", len(initialized), weights, seed, strings.Join(initialized, ", "))
	}
	if src := onnxOrigin(g); weights == "" && m.Weights == nil && len(initialized) > 0 && src != "" {
		// A module (or .gir) built from an .onnx file holds none of the file's weights (the
		// artifact has no place for them): without this line a run would quietly compute with
		// seeded values instead of the model's. It says the two ways to the file's weights.
		shape := boundFlags(m)
		fmt.Fprintf(stderr, "gcomp: no --weights: the %d parameters use seeded initializers (seed %d), not the weights of %s, which a built module or a .gir does not hold; for them run the .onnx itself (gcomp run %s%s ...), or write them once (gcomp init-weights %s%s -o w.safetensors) and give --weights w.safetensors\n",
			len(initialized), seed, src, src, shape, src, shape)
	}
	return params, nil
}

// boundFlags are the --max-shape flags that bound m's symbolic inputs as m was built, each input
// by the name the model's file gives it (" --max-shape x=8x3x32x32"), or, when no input is
// symbolic, a placeholder for the flags the .onnx needed.
func boundFlags(m *load.Model) string {
	var b strings.Builder
	for _, v := range m.Graph.Inputs() {
		if v.Type.Sym == nil {
			continue
		}
		dims := make([]string, len(v.Type.Shape))
		for i, d := range v.Type.Shape {
			dims[i] = fmt.Sprint(d)
		}
		fmt.Fprintf(&b, " --max-shape %s=%s", inputName(m.Names, v), strings.Join(dims, "x"))
	}
	if b.Len() == 0 {
		return " [the --shape flags it was built with]"
	}
	return b.String()
}

// onnxOrigin is the .onnx file g's values were imported from, as their locations name it, or "".
func onnxOrigin(g *ir.Graph) string {
	for _, v := range g.Values {
		if file, _, ok := strings.Cut(v.Pos, ".onnx:"); ok {
			return file + ".onnx"
		}
	}
	return ""
}

// paramCopies indexes the model parameters read from a file by their content (contentKey), each
// key naming the least such parameter, so that a tied weight saved under both of its state_dict
// names (nanoGPT's lm_head.weight and transformer.wte.weight) is found in one lookup: the file's
// tensors are matched in time linear in their number and size.
func paramCopies(file map[string]*tensorio.Array, params map[string]*tensor.Tensor) map[string]string {
	copies := map[string]string{}
	for name, a := range file {
		if params[name] == nil {
			continue
		}
		if k := contentKey(a); copies[k] == "" || name < copies[k] {
			copies[k] = name
		}
	}
	return copies
}

// contentKey identifies a tensor by dtype, shape and a SHA-256 of its bytes.
func contentKey(a *tensorio.Array) string {
	h := sha256.Sum256(a.Data)
	return fmt.Sprint(a.DType, a.Shape, hex.EncodeToString(h[:]))
}

// listNames joins names for a message, eliding all but the first few of a long list.
func listNames(names []string) string {
	const show = 10
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:show], ", "), len(names)-show)
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

// checkOutputDir fails early, before any work, when an output directory cannot be made: a file
// or a symbolic link in the way (missingParents). Missing parents and the directory itself are
// created only when the outputs are ready.
func checkOutputDir(dir string) error {
	_, err := missingParents(dir)
	return err
}

// checkNPYFiles checks that every file (a path relative to dir whose every part passes
// tensorio.CheckFileName) can be written under dir: no directory or socket in the way.
func checkNPYFiles(dir string, names []string) error {
	if err := checkOutputDir(dir); err != nil {
		return err
	}
	for _, name := range names {
		for _, part := range strings.Split(name, string(filepath.Separator)) {
			if err := tensorio.CheckFileName(part); err != nil {
				return err
			}
		}
		path := filepath.Join(dir, name)
		if sub := filepath.Dir(path); sub != filepath.Clean(dir) {
			if st, err := os.Stat(sub); err == nil && !st.IsDir() {
				return fmt.Errorf("cannot write %s: %s is not a directory", path, sub)
			}
		}
		if _, err := tensorio.Destination(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot write %s: %v", path, err)
		}
	}
	return nil
}

// writeNPYFiles writes every file into dir, or none. A new dir is made as a temporary directory
// beside it and renamed into place when every file is in it; into an existing dir the files are
// published together by tensorio.WriteFilesAtomic. Errors name the files as the user will know
// them (dir/NAME.npy).
func writeNPYFiles(dir string, files map[string]*tensorio.Array) (err error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	if err := checkNPYFiles(dir, names); err != nil {
		return fmt.Errorf("gcomp: %v", strings.TrimPrefix(err.Error(), "gcomp: "))
	}
	if _, err := os.Stat(dir); err == nil {
		return writeIntoDir(dir, names, files)
	}
	// Missing parents are made now, as mkdir -p, and removed again if the outputs fail.
	tmp, done, err := tempBeside(dir)
	if err != nil {
		return err
	}
	defer func() { done(err != nil) }()
	for _, name := range names {
		path := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("gcomp: %v", err)
		}
		if err := tensorio.WriteNPYFile(path, files[name]); err != nil {
			return fmt.Errorf("gcomp: %s: %v", filepath.Join(dir, name), strings.ReplaceAll(err.Error(), path+": ", ""))
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("gcomp: %v", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("gcomp: cannot create %s: %v", dir, err)
	}
	return nil
}

// writeIntoDir publishes the files into the existing dir together; a subdirectory it had to make
// is removed again when the writes fail.
func writeIntoDir(dir string, names []string, files map[string]*tensorio.Array) (err error) {
	var writes []tensorio.FileWrite
	for _, name := range names {
		path := filepath.Join(dir, name)
		if sub := filepath.Dir(path); sub != filepath.Clean(dir) {
			if _, err := os.Stat(sub); errors.Is(err, fs.ErrNotExist) {
				if err := os.Mkdir(sub, 0o755); err != nil {
					return fmt.Errorf("gcomp: %v", err)
				}
				defer func() {
					if err != nil {
						os.Remove(sub)
					}
				}()
			}
		}
		a := files[name]
		writes = append(writes, tensorio.FileWrite{Path: path, Write: func(w io.Writer) error { return tensorio.WriteNPY(w, a) }})
	}
	if err := tensorio.WriteFilesAtomic(writes...); err != nil {
		return fmt.Errorf("gcomp: %v", strings.TrimPrefix(err.Error(), "tensorio: "))
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
	if err := checkOutput(*out); err != nil {
		return err
	}
	m, err := mf.loadModel(path, false)
	if err != nil {
		return err
	}
	params, err := bindParams(m, "", false, *seed, stderr)
	if err != nil {
		return err
	}
	arrays := map[string]*tensorio.Array{}
	for name, t := range params {
		arrays[name] = t.Array()
	}
	return tensorio.WriteSafetensorsFile(*out, arrays, map[string]string{"format": "pt"})
}
