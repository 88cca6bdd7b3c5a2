package lm

import (
	"context"
	"fmt"
	"sync"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/device"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// The names the programs' graphs use (examples/gpt2, examples/llama).
const (
	inTokens  = "tokens"
	inPos     = "pos"
	inCache   = "kv_cache" // the inputs kv_cache.L.k and kv_cache.L.v (nn.KVCache)
	outLogits = "logits"
	outCache  = "new_kv_cache" // the outputs new_kv_cache.L.k and .v
)

// EngineOptions say where an engine runs and for how many sequences.
type EngineOptions struct {
	// Device is "ref" (the reference interpreter), "sim" (the PTX simulator), "cuda[:N]" or
	// "auto" (a GPU, else the simulator); "" is "auto".
	Device string
	// Batch is how many sequences decode together, each at its own position (default 1).
	Batch int
	// Packed builds the decode program once over a symbolic batch in [1, Batch] (packed.go):
	// Decode then takes the first n ≤ Batch slots and costs what n rows cost.
	Packed bool
	// Compiler options for compiled devices (target, producer); the zero value is sm_80 PTX.
	Compiler compiler.Options
	// NoSimChecks runs the simulator without its memory, race and barrier checks (faster).
	NoSimChecks bool
}

// An Engine runs a model's prefill and decode programs on one device over one KV cache of Batch
// sequences. The cache stays where the programs run: on a compiled device the decode program
// keeps it as state (executor.Program.Feedback), and each prefill program reads and writes that
// same buffer in place (executor.Program.Link) and shares the decode program's weights
// (LoadSharing). An Engine is not safe for concurrent use.
type Engine struct {
	m      *Model
	batch  int
	packed bool
	dev    executor.Device // nil on ref
	copt   compiler.Options
	name   string

	mu      sync.Mutex
	decode  *program
	prefill map[int]*program          // by prompt length
	cache   map[string]*tensor.Tensor // ref's KV cache, by input name

	decodeStats *passes.Stats
	closed      bool
}

// program is one compiled (or, on ref, interpreted) graph of the model.
type program struct {
	g    *ir.Graph
	prog *executor.Program // nil on ref
}

// Open compiles the decode program and loads it with the model's weights and a zero cache.
// Prefill programs are compiled on first use, one per prompt length.
func (m *Model) Open(opts EngineOptions) (*Engine, error) {
	if opts.Batch == 0 {
		opts.Batch = 1
	}
	if opts.Batch < 1 || opts.Batch > MaxBatch {
		return nil, fmt.Errorf("lm: batch %d is outside [1, %d]", opts.Batch, MaxBatch)
	}
	if opts.Device == "" {
		opts.Device = "auto"
	}
	e := &Engine{m: m, batch: opts.Batch, packed: opts.Packed, copt: opts.Compiler, prefill: map[int]*program{}}
	sel, err := device.Open(opts.Device, device.Options{Sim: func() (executor.Device, error) {
		return simdev.New(simdev.Options{NoCheck: opts.NoSimChecks}), nil
	}})
	if err != nil {
		return nil, fmt.Errorf("lm: %v", err)
	}
	e.dev = sel.Device
	if e.dev == nil {
		e.name = "ref (reference interpreter)"
	} else {
		e.name = e.dev.Name()
	}
	g, err := e.decodeGraph()
	if err != nil {
		return nil, err
	}
	e.decode = &program{g: e.source(g)}
	zero := map[string]*tensor.Tensor{}
	for _, in := range m.cacheStates() {
		zero[in] = tensor.New(m.cacheType(e.batch))
	}
	if e.dev == nil {
		e.cache = zero
		return e, nil
	}
	art, err := e.compile(g)
	if err != nil {
		return nil, err
	}
	p, err := executor.Load(e.dev, art)
	if err == nil {
		err = p.SetParams(m.weights)
		if err == nil {
			err = p.Feedback(m.cacheStates())
		}
		if err == nil {
			err = p.SetState(zero)
		}
		if err != nil {
			p.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lm: loading the decode program on %s: %v", e.name, err)
	}
	// One token's step is many small kernels: on a GPU they replay as one CUDA graph.
	p.UseGraphs(true)
	e.decode.prog = p
	return e, nil
}

// MaxBatch bounds EngineOptions.Batch.
const MaxBatch = 1024

// Device names where the engine runs.
func (e *Engine) Device() string { return e.name }

// Batch is how many sequences the engine decodes at once.
func (e *Engine) Batch() int { return e.batch }

// DecodeGraph is the decode program's graph.
func (e *Engine) DecodeGraph() *ir.Graph { return e.decode.g }

// source is the graph ref runs and the plan records: with autocast (EngineOptions.Compiler.AMP)
// its contractions run in bf16 or f16, as the compiled kernels do.
func (e *Engine) source(g *ir.Graph) *ir.Graph { return passes.AutocastGraph(g, e.copt.AMP) }

func (e *Engine) compile(g *ir.Graph) (*artifact.Artifact, error) {
	res, err := compiler.Compile(g, e.copt)
	if err != nil {
		return nil, fmt.Errorf("lm: compiling %s: %v", g.Name, err)
	}
	if g.Name == "decode" {
		e.decodeStats = res.Passes.Stats
	}
	return res.Artifact, nil
}

// DecodeStats is the cost model's report of the decode program (passes.Stats): kernels, DRAM
// bytes and the modeled time of one step on an H100. On ref the program is compiled for it.
func (e *Engine) DecodeStats() (*passes.Stats, error) {
	if e.decodeStats == nil {
		if _, err := e.compile(e.decode.g); err != nil {
			return nil, err
		}
	}
	return e.decodeStats, nil
}

// prefillProgram returns the prefill program for prompts of T tokens, compiling it first.
func (e *Engine) prefillProgram(T int) (*program, error) {
	if p := e.prefill[T]; p != nil {
		return p, nil
	}
	g, err := e.m.graph(fmt.Sprintf("prefill_%d", T), func(b *frontend.Builder) { e.m.arch.prefill(b, e.batch, T) })
	if err != nil {
		return nil, err
	}
	p := &program{g: e.source(g)}
	if e.dev != nil {
		art, err := e.compile(g)
		if err != nil {
			return nil, err
		}
		q, err := e.decode.prog.LoadSharing(e.dev, art)
		if err == nil {
			// The prompt's keys and values go straight into the decode program's cache.
			states := e.m.cacheStates()
			for _, in := range states {
				if err == nil {
					err = q.Link(in, e.decode.prog, in)
				}
			}
			if err == nil {
				err = q.Feedback(states)
			}
			if err != nil {
				q.Close()
			}
		}
		if err != nil {
			return nil, fmt.Errorf("lm: loading the prefill program on %s: %v", e.name, err)
		}
		p.prog = q
	}
	e.prefill[T] = p
	return p, nil
}

// Prefill runs prompts (one per sequence, all of one length T ≥ 1) from position 0: their keys
// and values fill cache positions [0, T), and it returns each sequence's next-token logits
// [batch][vocab].
func (e *Engine) Prefill(ctx context.Context, prompts [][]int) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return nil, err
	}
	if len(prompts) != e.batch {
		return nil, fmt.Errorf("lm: %d prompts for a batch of %d", len(prompts), e.batch)
	}
	T := len(prompts[0])
	for i, p := range prompts {
		if len(p) != T {
			return nil, fmt.Errorf("lm: prompt %d has %d tokens, prompt 0 has %d: a batch's prompts are of one length", i, len(p), T)
		}
	}
	if T < 1 || T > e.m.MaxSeq() {
		return nil, fmt.Errorf("lm: a prompt of %d tokens: the model's context holds 1 to %d", T, e.m.MaxSeq())
	}
	tokens := make([]int, 0, e.batch*T)
	for _, p := range prompts {
		tokens = append(tokens, p...)
	}
	if err := e.m.checkIDs(tokens); err != nil {
		return nil, err
	}
	p, err := e.prefillProgram(T)
	if err != nil {
		return nil, err
	}
	return e.run(ctx, p, tokens, T, make([]int, e.batch))
}

// Decode runs one token per sequence, sequence b's at position pos[b] (its cache holds
// positions [0, pos[b]) from earlier runs), and returns each sequence's next-token logits.
func (e *Engine) Decode(ctx context.Context, tokens, pos []int) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return nil, err
	}
	if err := e.checkRows(len(tokens), len(pos)); err != nil {
		return nil, err
	}
	for b, p := range pos {
		if p < 0 || p >= e.m.MaxSeq() {
			return nil, fmt.Errorf("lm: sequence %d at position %d: the model's context holds positions 0 to %d", b, p, e.m.MaxSeq()-1)
		}
	}
	if err := e.m.checkIDs(tokens); err != nil {
		return nil, err
	}
	return e.run(ctx, e.decode, tokens, 1, pos)
}

func (e *Engine) usable() error {
	if e.closed {
		return fmt.Errorf("lm: the engine is closed")
	}
	return nil
}

// run runs p on tokens [n, T] at positions pos (n = len(pos): the batch, or a packed decode's
// first n slots) and returns the logits.
func (e *Engine) run(ctx context.Context, p *program, tokens []int, T int, pos []int) ([][]float32, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	n := len(pos)
	in := map[string]*tensor.Tensor{
		inTokens: intTensor(tokens, n, T),
		inPos:    intTensor(pos, n),
	}
	var logits *tensor.Tensor
	if p.prog == nil {
		states := e.m.cacheStates()
		for _, name := range states {
			in[name] = e.cacheRows(name, n)
		}
		out, err := ref.RunContext(ctx, p.g, in, e.m.weights)
		if err != nil {
			return nil, fmt.Errorf("lm: %s on ref: %w", p.g.Name, err)
		}
		for o, name := range states {
			e.setCacheRows(name, out[o])
		}
		logits = out[outLogits]
	} else {
		res, err := p.prog.RunContext(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("lm: %s on %s: %w", p.g.Name, e.name, err)
		}
		logits = res.Outputs[outLogits]
	}
	V := logits.Type.Shape[1]
	rows := make([][]float32, n)
	for b := range rows {
		rows[b] = make([]float32, V)
		for i := range V {
			rows[b][i] = float32(logits.F[b*V+i])
		}
	}
	return rows, nil
}

func intTensor(v []int, shape ...int) *tensor.Tensor {
	t := tensor.New(ir.T(ir.I64, shape...))
	for i, x := range v {
		t.I[i] = int64(x)
	}
	return t
}

// Close frees the engine's device memory.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	var first error
	for _, p := range e.prefill {
		if p.prog != nil {
			if err := p.prog.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	if e.decode.prog != nil {
		if err := e.decode.prog.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
