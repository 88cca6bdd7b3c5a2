package main

import (
	"flag"
	"fmt"
	"github.com/gcomp/gcomp/codegen/nvrtc"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/tensorio"
)

// modelFlags are the flags every command that loads a model shares.
type modelFlags struct {
	entry   *string
	timeout *time.Duration
	memory  *byteSize
	onnx    onnxFlags
	batch   *int // --batch, for the commands that take it (nil otherwise)
	maxB    *int // --max-batch, likewise
	// given reports whether a flag was on the command line: 0 is --batch's and --max-batch's
	// "not given", so a 0 the user wrote is refused rather than taken as absent.
	given func(name string) bool
}

func addModelFlags(fs *flag.FlagSet) modelFlags {
	mem := byteSize(load.DefaultMemory)
	fs.Var(&mem, "load-memory", "the most memory a .go model's code may allocate while building its graph (bytes, or 512MiB, 8GiB)")
	return modelFlags{
		entry:   fs.String("entry", load.DefaultEntry, "name of the model function in a .go model file"),
		timeout: fs.Duration("load-timeout", load.DefaultTimeout, "the longest a .go model's code may take to build its graph"),
		memory:  &mem,
		onnx:    addONNXFlags(fs),
	}
}

// addBatchedModelFlags is addModelFlags with --batch, the batch a .go model is traced at.
func addBatchedModelFlags(fs *flag.FlagSet) modelFlags {
	m := addModelFlags(fs)
	m.batch = fs.Int("batch", 0, "trace a .go model at this batch instead of its file's own (the model declares it with b.Batch); fill an .onnx model's symbolic first input dims")
	m.maxB = fs.Int("max-batch", 0, "trace a .go model over a batch known only at run time, in [1, N]: b.Batch gives the dim batch, and one build runs at every batch in range")
	m.given = func(name string) bool { return given(fs, name) }
	return m
}

// isGiven reports whether flag name was on the command line (false where nothing records it).
func (m modelFlags) isGiven(name string) bool { return m.given != nil && m.given(name) }

func (m modelFlags) load(path string) (*ir.Graph, error) {
	lm, err := m.loadModel(path, false)
	if err != nil {
		return nil, err
	}
	return lm.Graph, nil
}

// loadTraining loads the model at path in training mode (gcomp train's step).
func (m modelFlags) loadTraining(path string) (*ir.Graph, error) {
	lm, err := m.loadModel(path, true)
	if err != nil {
		return nil, err
	}
	return lm.Graph, nil
}

// loadModel loads the model at path with the weights it carries (an .onnx model's).
func (m modelFlags) loadModel(path string, training bool) (*load.Model, error) {
	if err := notModelFolder(path); err != nil {
		return nil, err
	}
	lopt, err := m.options(training)
	if err != nil {
		return nil, err
	}
	return load.ModelFile(path, lopt)
}

// loadModelBatch loads the model at path traced at batch (0: --batch, else the model's own) and
// returns the batch it was traced at (0 if the model declares none).
func (m modelFlags) loadModelBatch(path string, batch int) (*load.Model, int, error) {
	if err := notModelFolder(path); err != nil {
		return nil, 0, err
	}
	lopt, err := m.options(false)
	if err != nil {
		return nil, 0, err
	}
	if batch != 0 {
		lopt.Batch = batch
	}
	return load.ModelFileBatch(path, lopt)
}

// notModelFolder refuses a Hugging Face model folder where one model file is wanted, saying
// which commands take the folder.
func notModelFolder(path string) error {
	if !isModelFolder(path) {
		return nil
	}
	return fmt.Errorf("%s is a Hugging Face model folder, not one model file: gcomp generate and gcomp serve run it; "+
		"gcomp dump %s --program decode (or prefill) prints a program of it as .gir for the other commands", path, path)
}

func (m modelFlags) options(training bool) (load.Options, error) {
	opt, err := m.onnx.options()
	if err != nil {
		return load.Options{}, err
	}
	lopt := load.Options{Entry: *m.entry, Timeout: *m.timeout, Memory: int64(*m.memory), ONNX: opt, Training: training}
	if m.batch != nil {
		if *m.batch < 0 || *m.batch == 0 && m.isGiven("batch") {
			return load.Options{}, fmt.Errorf("gcomp: --batch %d: must be positive", *m.batch)
		}
		lopt.Batch = *m.batch
	}
	if m.maxB != nil {
		if *m.maxB < 0 || *m.maxB == 0 && m.isGiven("max-batch") || *m.maxB > 0 && lopt.Batch != 0 {
			return load.Options{}, fmt.Errorf("gcomp: --max-batch %d: must be positive, without --batch", *m.maxB)
		}
		lopt.MaxBatch = *m.maxB
	}
	return lopt, nil
}

// statsFlag is --stats (a table) or --stats=json.
type statsFlag string

func (f *statsFlag) String() string   { return string(*f) }
func (f *statsFlag) IsBoolFlag() bool { return true }
func (f *statsFlag) Set(v string) error {
	switch v {
	case "true", "table":
		*f = "table"
	case "json":
		*f = "json"
	case "false":
		*f = ""
	default:
		return fmt.Errorf("want --stats or --stats=json")
	}
	return nil
}

// targetFlags are the code generation flags build, run and check share.
type targetFlags struct {
	target  *string
	tf32    *bool
	amp     *string
	backend *string
	nvvmLib *string
	nvrtc   *string
}

func addTargetFlags(fs *flag.FlagSet) targetFlags {
	return targetFlags{
		target:  fs.String("target", "sm_80", "GPU architecture: sm_80, sm_86, sm_89 or sm_90 (sm_80 PTX is JIT-compiled by the driver for newer GPUs)"),
		tf32:    fs.Bool("tf32", false, "run f32 matmuls on TF32 tensor cores (faster, about 3 decimal digits)"),
		amp:     fs.String("amp", "", "autocast at inference, as torch.autocast: bf16 or f16 runs matmuls and convolutions in that dtype on tensor cores (f32 accumulation, weights cast once when bound); everything else and the outputs stay f32"),
		backend: fs.String("backend", "ptx", "PTX producer: ptx (gcomp's emitter), nvvm (NVVM IR compiled by NVIDIA's libNVVM) or auto (per kernel, the one ptxas counts better; recorded in the plan)"),
		nvvmLib: fs.String("nvvm-lib", "", "libNVVM to load with --backend nvvm (default: $GCOMP_NVVM_LIB, the CUDA toolkit, Debian's libnvvm4, .cache/nvvm)"),
		nvrtc:   fs.String("nvrtc-lib", "", "the NVRTC library compiling custom ops' CUDA C (default: $"+nvrtc.LibraryEnv+", the CUDA toolkit, Debian's libnvrtc11.2)"),
	}
}

// options are the compiler options the flags select.
func (f targetFlags) options() (compiler.Options, error) {
	t, err := f.get()
	if err != nil {
		return compiler.Options{}, err
	}
	p, err := backend.New(*f.backend, *f.nvvmLib)
	if err != nil {
		return compiler.Options{}, fmt.Errorf("--backend: %v", err)
	}
	amp, err := passes.ParseAMP(*f.amp)
	if err != nil {
		return compiler.Options{}, fmt.Errorf("--amp: %v", err)
	}
	return compiler.Options{Target: t, Producer: p, AMP: amp}, nil
}

func (f targetFlags) get() (ptx.Target, error) {
	var sm int
	if _, err := fmt.Sscanf(*f.target, "sm_%d", &sm); err != nil || *f.target != fmt.Sprintf("sm_%d", sm) {
		return ptx.Target{}, fmt.Errorf("--target %q: want sm_80, sm_86, sm_89 or sm_90", *f.target)
	}
	switch sm {
	case 80, 86, 89, 90:
	default:
		return ptx.Target{}, fmt.Errorf("--target %s is not supported (want sm_80, sm_86, sm_89 or sm_90)", *f.target)
	}
	if *f.nvrtc != "" {
		os.Setenv(nvrtc.LibraryEnv, *f.nvrtc) // the compiler's lookup order puts the flag first, then this
	}
	return ptx.Target{SM: sm, TF32: *f.tf32}, nil
}

func cmdBuild(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	mf := addBatchedModelFlags(fs)
	tf := addTargetFlags(fs)
	out := fs.String("o", "", "write the output to this file instead of standard output (with --emit ptx, the launch plan goes beside it as NAME.plan.json)")
	emit := fs.String("emit", "ptx", "what to write: ptx (the PTX module and its launch plan), plan (the launch plan with the memory plan, JSON), ir (the source graph, .gir), dot (graphviz), kernels (the fused kernel graph) or nvvm (the NVVM IR module, .ll)")
	var stats statsFlag
	fs.Var(&stats, "stats", "print the cost report: --stats for a table, --stats=json for one JSON object")
	var statsAtFlag multiFlag
	fs.Var(&statsAtFlag, "stats-at", "with --stats, also report the costs with dim NAME at size VALUE (NAME=VALUE, repeatable; a dim not named stays at its bound), beside the bound's")
	var specialize multiFlag
	fs.Var(&specialize, "specialize", "for a model with dims, also compile the program with dim NAME's upper bound lowered to BOUND (NAME=BOUND, repeatable: the range is split after each bound; the runtime picks the variant per run), or auto: split at half the bound where the cost model finds that at least 5% faster")
	dumpAfter := fs.String("dump-after", "", "print the IR after this pass (or all) to stderr")
	var disable multiFlag
	fs.Var(&disable, "disable-pass", "skip this pass (repeatable)")
	timings := fs.Bool("timings", false, "print the time each pass took to stderr")
	verifyEach := fs.Bool("verify-each", false, "check the IR, kernel graph and plan after every pass")
	cubin := fs.String("cubin", "", "with -o, also assemble the module with ptxas for these architectures (sm_80,sm_90) and store the cubins beside it; the runtime loads the one matching the GPU and otherwise JIT-compiles the PTX")
	path, err := parseModelArgs(fs, args, stdout, "MODEL [-o model.ptx] [--emit ptx|plan|ir|dot|kernels|nvvm] [--target sm_80|sm_86|sm_89|sm_90] [--tf32] [--amp bf16|f16] [--backend ptx|nvvm|auto] [--nvvm-lib PATH] [--cubin sm_80,sm_90] [--stats[=json]] [--stats-at NAME=VALUE]... [--specialize NAME=BOUND|auto]... [--dump-after PASS|all] [--disable-pass NAME]... [--timings] [--verify-each]")
	if err != nil {
		return err
	}
	archs, err := cubinArchs(*cubin)
	if err != nil {
		return fmt.Errorf("gcomp build: --cubin: %v", err)
	}
	if len(archs) > 0 && (*emit != "ptx" || *out == "") {
		return fmt.Errorf("gcomp build: --cubin stores cubins beside the module: give -o model.ptx (and --emit ptx)")
	}
	explicitEmit := false
	fs.Visit(func(f *flag.Flag) { explicitEmit = explicitEmit || f.Name == "emit" })
	switch *emit {
	case "ptx", "plan", "ir", "dot", "kernels", "nvvm":
	default:
		return fmt.Errorf("gcomp build: unknown --emit %q (want ptx, plan, ir, dot, kernels or nvvm)", *emit)
	}
	// Both the report and the --emit output would go to standard output: refuse before any work.
	if *out == "" && stats != "" && explicitEmit {
		return fmt.Errorf("gcomp build: with --stats, give -o FILE for the --emit output")
	}
	if len(statsAtFlag) > 0 && stats == "" {
		return fmt.Errorf("gcomp build: --stats-at reports costs: give --stats too")
	}
	copt, err := tf.options()
	if err != nil {
		return fmt.Errorf("gcomp build: %v", err)
	}
	if err := copt.SetSpecialize(specialize); err != nil {
		return fmt.Errorf("gcomp build: --%v", err)
	}
	if len(specialize) > 0 && *emit != "ptx" && *emit != "plan" {
		return fmt.Errorf("gcomp build: --specialize compiles variants of the module: use it with --emit ptx or plan")
	}
	// Every destination is checked before any work: the module and, beside it, its plan and cubins.
	if *out != "" {
		outs := []string{*out}
		if *emit == "ptx" {
			outs = append(outs, artifact.PlanPath(*out))
			for _, arch := range archs {
				outs = append(outs, artifact.CubinPath(*out, arch))
			}
		}
		for _, o := range outs {
			if err := checkOutput(o); err != nil {
				return err
			}
		}
	}
	target := copt.Target
	if *emit == "nvvm" {
		copt.Producer = &nvvm.Producer{IROnly: true}
	}
	lm, err := mf.loadModel(path, false) // eval mode, as run and check load it
	if err != nil {
		return err
	}
	g := passes.AutocastGraph(lm.Graph, copt.AMP) // so --emit ir and dot show what the kernels compute
	var atSizes map[string]int64
	if len(statsAtFlag) > 0 {
		if atSizes, err = statsAtSizes(g, statsAtFlag); err != nil {
			return fmt.Errorf("gcomp build: %s: %v", path, err)
		}
	}
	var text string
	switch *emit {
	case "ir":
		text = g.String()
	case "dot":
		text = g.DOT()
	}
	// --stats alone prints the report and nothing else: only the passes run.
	statsOnly := stats != "" && !explicitEmit && *out == ""
	var art *artifact.Artifact
	if *emit == "ptx" || *emit == "plan" || *emit == "kernels" || *emit == "nvvm" || stats != "" {
		opt := passes.Options{DumpAfter: *dumpAfter, DumpTo: stderr, DisablePasses: disable, VerifyEach: *verifyEach}
		if *timings {
			opt.Timings = stderr
		}
		var res *passes.Result
		var c *compiler.Result
		if *emit == "kernels" || statsOnly && !target.TF32 && len(specialize) == 0 {
			// Only the passes are needed (with --tf32 codegen runs too, to say which kernels
			// fall back to FFMA).
			opt.TF32, opt.SM = target.TF32, target.SM
			res, err = passes.Run(g, opt)
		} else {
			copt.Passes = opt
			if c, err = compiler.Compile(g, copt); err == nil {
				res, art = c.Passes, c.Artifact
			}
		}
		if err != nil {
			return fmt.Errorf("gcomp build: %s: %v", path, err)
		}
		if art != nil {
			art.Plan.SourceNames = planNames(lm.Names)
			for _, n := range art.Plan.Notes() {
				fmt.Fprintf(stderr, "gcomp: note: %s\n", n)
			}
		}
		switch {
		case *emit == "kernels":
			text = res.Kernels.String()
		case art != nil && *emit == "plan":
			text = string(art.Plan.JSON())
		case art != nil:
			text = string(art.PTX) // with --emit nvvm, the NVVM IR module
		}
		if atSizes != nil {
			opt.TF32, opt.SM = target.TF32, target.SM
			at, variant, err := statsAtVariant(g, atSizes, opt, res, c)
			if err != nil {
				return fmt.Errorf("gcomp build: %s: --stats-at: %v", path, err)
			}
			writeStatsAt(stdout, string(stats), g, res.Stats, at, atSizes, variant)
		} else if stats == "json" {
			stdout.Write(res.Stats.JSON())
		} else if stats == "table" {
			if len(g.Dims) > 0 { // the report of a model with dims is at their bounds: say so
				fmt.Fprintf(stdout, "at the bound (%s):\n", compiler.SizesString(g, boundSizes(g)))
			}
			res.Stats.WriteTable(stdout)
			writeVariants(stdout, art)
		}
	}
	if statsOnly {
		return nil
	}
	if *out == "" && stats != "" {
		return fmt.Errorf("gcomp build: with --stats, give -o FILE for the --emit output")
	}
	if *emit == "ptx" && *out != "" {
		if err := addCubins(art, archs, stderr); err != nil {
			return fmt.Errorf("gcomp build: %v", err)
		}
		return art.Write(*out)
	}
	return writeOutput(*out, stdout, text)
}

func cmdDump(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	mf := addBatchedModelFlags(fs)
	lmf := addProgramFlags(fs)
	path, err := parseModelArgs(fs, args, stdout, "MODEL | MODEL_DIR --program prefill|decode [--prompt-len T] [--batch B | --max-batch N]")
	if err != nil {
		return err
	}
	var g *ir.Graph
	if isModelFolder(path) || *lmf.program != "" {
		g, err = lmf.graph(path, *mf.batch, *mf.maxB)
	} else {
		g, err = mf.load(path)
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, g.String())
	return err
}

// writeOutput writes text to path atomically, or to stdout when path is empty.
func writeOutput(path string, stdout io.Writer, text string) error {
	if path == "" {
		_, err := io.WriteString(stdout, text)
		return err
	}
	return tensorio.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	})
}

// checkOutput fails before any work when a command could not write path: its directory is
// missing, or path names what a write must not replace (a directory, a socket).
func checkOutput(path string) error {
	if dir := filepath.Dir(path); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("gcomp: cannot write %s: directory %s does not exist", path, dir)
		}
	}
	if _, err := tensorio.Destination(path); err != nil {
		return fmt.Errorf("gcomp: cannot write %s: %v", path, err)
	}
	return nil
}
