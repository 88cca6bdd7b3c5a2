package gcomp

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/tensor"
)

// Options configure compilation. The zero value compiles for sm_80 with exact f32 arithmetic
// and gcomp's own PTX emitter.
type Options struct {
	// Target is the GPU architecture: "sm_80" (the default), "sm_86", "sm_89" or "sm_90".
	Target string
	// TF32 runs f32 matmuls on TF32 tensor cores (faster; about 3 decimal digits).
	TF32 bool
	// AMP is autocast at inference, as torch.autocast: "bf16" or "f16" runs matmuls and
	// convolutions in that dtype on tensor cores with f32 accumulation (each weight cast once,
	// when weights are bound), everything else and the outputs in f32; "" (the default) none.
	// The model's graph (and so the reference interpreter's run) is the autocast graph.
	AMP string
	// Backend is the PTX producer: "ptx" (the default, gcomp's emitter) or "nvvm" (NVVM IR
	// compiled by NVIDIA's libNVVM, found as codegen/nvvm/libnvvm searches for it).
	Backend string
	// Shapes fixes an ONNX model's input shapes by input name (its batch, say); Consts binds
	// the ONNX inputs that decide shapes at compile time. Both apply to .onnx files only.
	Shapes map[string][]int
	Consts map[string]*tensor.Tensor
	// Batch traces a model file at this batch instead of its own (0): a model.go that declares
	// its batch with b.Batch(N), or an .onnx model whose inputs leave their first dim symbolic.
	// A model whose batch is fixed is an error naming the line that fixes it.
	Batch int
	// The options below build one model for every size in a range (docs/dynamic.md), as gcomp
	// build's flags of the same names do. MaxBatch traces a model (a Compile function or a
	// model.go) that declares its batch with b.Batch(N) over a batch known only at run time, the
	// dim "batch" in [1, MaxBatch]; it excludes Batch. MaxShapes bounds an .onnx model's dynamic
	// input axes by input name ("x": {8, 3, 32, 32}): each becomes a dim in [1, bound] named
	// after its dim_param. Specialize compiles variants for smaller ranges beside the bound's
	// build, chosen per run: "NAME=BOUND" splits dim NAME's range after BOUND (several values
	// split it several times; with several dims split, every combination is a variant), "auto"
	// splits each dim at half its bound where the cost model finds that at least 5% faster.
	MaxBatch   int
	MaxShapes  map[string][]int
	Specialize []string
}

// Model is a compiled model: its graph, which the reference interpreter runs, and the PTX
// module and launch plan compiled devices run. A Model is immutable and safe to share; open
// Sessions on it to run it.
type Model struct {
	graph *ir.Graph
	art   *artifact.Artifact
	// initial are the parameters' values the model file carries (an ONNX model's
	// initializers), used where a session is given no weight.
	initial *onnx.Weights
	// names are an ONNX model's input and output names as its file gives them (nil for others).
	names *onnx.Names
}

// Compile compiles the model a Go function builds with the DSL (package frontend), compiled
// into the calling program: no interpreter runs. The batch and every other shape are what
// build declares, so a function that closes over a batch size compiles a model of that batch.
func Compile(name string, build func(*frontend.Builder), opts Options) (*Model, error) {
	if build == nil {
		return nil, fmt.Errorf("gcomp: Compile %s: the build function is nil", name)
	}
	if opts.MaxShapes != nil {
		return nil, fmt.Errorf("gcomp: Compile %s: MaxShapes bounds an .onnx model's axes; a Go model bounds its batch with MaxBatch or declares dims with b.Dim", name)
	}
	var bopts []frontend.Option
	if opts.Batch != 0 {
		bopts = append(bopts, frontend.WithBatch(opts.Batch))
	}
	if opts.MaxBatch != 0 {
		bopts = append(bopts, frontend.WithMaxBatch(opts.MaxBatch))
	}
	g, err := frontend.Build(name, build, bopts...)
	if err != nil {
		return nil, err
	}
	return compileGraph(g, opts)
}

// CompileFile loads a model file and compiles it: a model.go (run by gcomp's embedded Go
// interpreter; its shapes, batch included, are the file's), a .gir graph, or an .onnx model,
// whose dynamic input shapes Options.Shapes fixes and whose initializers become the session's
// weights unless others are given; Options.Batch traces either at another batch. Errors carry
// file:line where the file has one.
func CompileFile(path string, opts Options) (*Model, error) {
	lopt := load.Options{ONNX: onnx.Options{Shapes: opts.Shapes, Consts: opts.Consts, MaxShapes: opts.MaxShapes}, Batch: opts.Batch, MaxBatch: opts.MaxBatch}
	lm, err := load.ModelFile(path, lopt)
	if err != nil {
		return nil, err
	}
	m, err := compileGraph(lm.Graph, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m.initial, m.names = lm.Weights, lm.Names
	return m, nil
}

// CompileGraph compiles a verified graph (package ir), as built by frontend.Build or read by
// ir.Parse. The graph must not change afterwards. Its dims are its own: MaxBatch and MaxShapes,
// which shape a graph while it is built, are an error here.
func CompileGraph(g *ir.Graph, opts Options) (*Model, error) {
	if g == nil {
		return nil, errors.New("gcomp: CompileGraph: the graph is nil")
	}
	if opts.MaxBatch != 0 || opts.MaxShapes != nil {
		return nil, fmt.Errorf("gcomp: CompileGraph %s: MaxBatch and MaxShapes bound a model while it is built; a graph declares its dims itself (ir.Graph.DeclareDim, dims { } in .gir)", g.Name)
	}
	return compileGraph(g, opts)
}

func compileGraph(g *ir.Graph, opts Options) (*Model, error) {
	copt, err := opts.compiler()
	if err != nil {
		return nil, err
	}
	g = passes.AutocastGraph(g, copt.AMP)
	res, err := compiler.Compile(g, copt)
	if err != nil {
		return nil, err
	}
	return &Model{graph: g, art: res.Artifact}, nil
}

func (o Options) compiler() (compiler.Options, error) {
	sm := 80
	if o.Target != "" {
		if _, err := fmt.Sscanf(o.Target, "sm_%d", &sm); err != nil || o.Target != fmt.Sprintf("sm_%d", sm) || !slices.Contains([]int{80, 86, 89, 90}, sm) {
			return compiler.Options{}, fmt.Errorf("gcomp: target %q: want sm_80, sm_86, sm_89 or sm_90", o.Target)
		}
	}
	p, err := backend.New(o.Backend, "")
	if err != nil {
		return compiler.Options{}, fmt.Errorf("gcomp: %v", err)
	}
	amp, err := passes.ParseAMP(o.AMP)
	if err != nil {
		return compiler.Options{}, fmt.Errorf("gcomp: %v", err)
	}
	copt := compiler.Options{Target: ptx.Target{SM: sm, TF32: o.TF32}, Producer: p, AMP: amp}
	if err := copt.SetSpecialize(o.Specialize); err != nil {
		return compiler.Options{}, fmt.Errorf("gcomp: %v", err)
	}
	return copt, nil
}

// Graph is the model's source graph.
func (m *Model) Graph() *ir.Graph { return m.graph }

// Artifact is the compiled module and launch plan (what gcomp build writes).
func (m *Model) Artifact() *artifact.Artifact { return m.art }

// Name is the model's name.
func (m *Model) Name() string { return m.graph.Name }

// TensorInfo describes one input, output or parameter of a model. Shape is its size along each
// axis; an axis the model leaves open until run time (dims.go) has its upper bound there, Dims
// its size as an expression over the model's dims ("batch", "batch*seq"; a static axis's number)
// and Lo its lower end. Dims and Lo are nil for a static tensor.
type TensorInfo struct {
	Name  string   `json:"name"`
	DType string   `json:"dtype"` // "f32", "i64", ...
	Shape []int    `json:"shape"`
	Dims  []string `json:"dims,omitempty"`
	Lo    []int    `json:"lo,omitempty"`
}

// Inputs describes the model's inputs in declaration order (an .onnx model's by the names its
// file gives them).
func (m *Model) Inputs() []TensorInfo {
	var out []TensorInfo
	for _, v := range m.graph.Inputs() {
		out = append(out, info(m.graph, m.inputName(v), v.Type))
	}
	return out
}

// Outputs describes the model's outputs in declaration order (an .onnx model's by the names its
// file gives them).
func (m *Model) Outputs() []TensorInfo {
	var out []TensorInfo
	for _, o := range m.graph.Outputs {
		out = append(out, info(m.graph, m.outputName(o.Name), o.Value.Type))
	}
	return out
}

// Params describes the model's parameters (the weights a session needs) in declaration order.
func (m *Model) Params() []TensorInfo {
	var out []TensorInfo
	for _, v := range m.graph.Params() {
		out = append(out, info(m.graph, v.Name, v.Type))
	}
	return out
}
