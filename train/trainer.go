package train

import (
	"fmt"
	"iter"
	"time"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// trainer runs train steps and evaluations on one device, keeping the weights and the optimizer
// state there. A step goes prepare (in the loader's goroutine), upload, launch, wait.
type trainer interface {
	// prepare readies a batch in the data loader's goroutine: the compiled trainer, prefetching,
	// packs its inputs into pinned host memory.
	prepare(b *data.Batch) error
	// upload queues b's inputs for the next launch: the compiled trainer, prefetching, copies
	// them on the device's copy stream while the launched step computes.
	upload(b *data.Batch) error
	// launch starts a train step on b.
	launch(b *data.Batch) error
	// wait finishes the launched step and returns the outputs that reach the host (loss,
	// prediction).
	wait() (map[string]*tensor.Tensor, error)
	evaluator
	// weights returns every parameter and the optimizer state.
	weights() (params, state map[string]*tensor.Tensor, err error)
	close()
}

// evaluator runs the evaluation graph with the current weights.
type evaluator interface {
	runEval(in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error)
}

// newTrainer starts a trainer on dev (the reference interpreter for nil) from params and state
// (copied).
func newTrainer(dev executor.Device, copt compiler.Options, step *StepGraph, m *Model, params, state map[string]*tensor.Tensor, prefetch, graphs bool) (trainer, error) {
	if dev == nil {
		t := NewRefTrainer(step, params)
		for k, v := range state {
			t.State[k] = v.Clone()
		}
		return &refTrainer{t: t, eval: m.Eval, m: m}, nil
	}
	// A step over a symbolic batch takes its inputs at each batch's size: staging them ahead
	// fixes the bound's (executor.Program.Stage refuses a program with dims).
	prefetch = prefetch && len(step.Graph.Dims) == 0
	c := &compiledTrainer{dev: dev, step: step, m: m, prefetch: prefetch}
	if err := c.load(copt, params, state); err != nil {
		c.close()
		return nil, err
	}
	c.prog.UseGraphs(graphs) // devices without graphs (the simulator) launch kernel by kernel
	return c, nil
}

// stepInputs are a train step's inputs from a batch.
func (m *Model) stepInputs(b *data.Batch) map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{m.Input: b.X, m.Target: b.Y}
}

// refTrainer trains on the reference interpreter: a launch runs the step.
type refTrainer struct {
	t    *RefTrainer
	eval *ir.Graph
	m    *Model
	out  map[string]*tensor.Tensor
	err  error
}

func (r *refTrainer) prepare(*data.Batch) error { return nil }
func (r *refTrainer) upload(*data.Batch) error  { return nil }

func (r *refTrainer) launch(b *data.Batch) error {
	r.out, r.err = r.t.Run(r.m.stepInputs(b))
	return nil
}

func (r *refTrainer) wait() (map[string]*tensor.Tensor, error) {
	out, err := r.out, r.err
	r.out, r.err = nil, nil
	return out, err
}

func (r *refTrainer) runEval(in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	return ref.Run(r.eval, in, r.t.Params)
}

func (r *refTrainer) weights() (map[string]*tensor.Tensor, map[string]*tensor.Tensor, error) {
	return r.t.Params, r.t.State, nil
}

func (r *refTrainer) close() {}

// compiledTrainer runs the compiled step on an executor device: parameters and state stay on
// the device (Feedback); the evaluation graph is a second program whose weights are copied from
// the step's before each evaluation.
type compiledTrainer struct {
	dev      executor.Device
	step     *StepGraph
	m        *Model
	prefetch bool // stage batches in pinned memory and upload them ahead (Program.Prefetch)
	prog     *executor.Program
	eval     evalProgram
}

// evalProgram is the evaluation graph's program and whether it holds the trained weights: a
// train step (or a rank's sync) makes them stale, and the next evaluation copies them first.
type evalProgram struct {
	p     *executor.Program
	fresh bool
}

// run evaluates in, first copying the parameters that weights reads if they are stale.
func (e *evalProgram) run(in map[string]*tensor.Tensor, weights func() (params, state map[string]*tensor.Tensor, err error)) (map[string]*tensor.Tensor, error) {
	if !e.fresh {
		params, _, err := weights()
		if err != nil {
			return nil, err
		}
		if err := e.p.SetParams(params); err != nil {
			return nil, err
		}
		e.fresh = true
	}
	res, err := e.p.Run(in)
	if err != nil {
		return nil, err
	}
	return res.Outputs, nil
}

// StepCompilerOptions are the options a train step's graphs compile with: copt, with the passes
// told that the parameters change every run (passes.Options.ParamsChangeEveryRun), since a step
// replaces them. The evaluation compiles with copt: its weights change only when copied in.
func StepCompilerOptions(copt compiler.Options) compiler.Options {
	copt.Passes.ParamsChangeEveryRun = true
	return copt
}

func (c *compiledTrainer) load(copt compiler.Options, params, state map[string]*tensor.Tensor) error {
	stepArt, err := compiler.Compile(c.step.Graph, StepCompilerOptions(copt))
	if err != nil {
		return fmt.Errorf("compiling the train step: %v", err)
	}
	evalArt, err := compiler.Compile(c.m.Eval, copt)
	if err != nil {
		return fmt.Errorf("compiling the evaluation: %v", err)
	}
	if c.prog, err = c.step.Load(c.dev, stepArt.Artifact, params, state); err != nil {
		return err
	}
	c.eval.p, err = executor.Load(c.dev, evalArt.Artifact)
	return err
}

// prepare runs in the loader's goroutine, which Program.Stage allows.
func (c *compiledTrainer) prepare(b *data.Batch) error {
	if !c.prefetch {
		return nil
	}
	s, err := c.prog.Stage(c.m.stepInputs(b))
	b.Device = s
	return err
}

func (c *compiledTrainer) upload(b *data.Batch) error {
	if !c.prefetch {
		return nil
	}
	s, ok := b.Device.(*executor.Staged)
	if !ok {
		return fmt.Errorf("batch %d was not staged", b.Index)
	}
	return c.prog.Prefetch(s)
}

func (c *compiledTrainer) launch(b *data.Batch) error {
	c.eval.fresh = false
	if c.prefetch {
		return c.prog.Launch(nil)
	}
	return c.prog.Launch(c.m.stepInputs(b))
}

func (c *compiledTrainer) wait() (map[string]*tensor.Tensor, error) {
	res, err := c.prog.Wait()
	if err != nil {
		return nil, err
	}
	return res.Outputs, nil
}

func (c *compiledTrainer) runEval(in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	return c.eval.run(in, c.weights)
}

func (c *compiledTrainer) weights() (map[string]*tensor.Tensor, map[string]*tensor.Tensor, error) {
	params, state := map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for _, p := range c.step.Graph.Params() {
		t, err := c.prog.Read(p.Name)
		if err != nil {
			return nil, nil, err
		}
		params[p.Name] = t
	}
	for _, v := range c.step.State {
		t, err := c.prog.Read(v.Name)
		if err != nil {
			return nil, nil, err
		}
		state[v.Name] = t
	}
	return params, state, nil
}

// close closes the programs; the device is the caller's.
func (c *compiledTrainer) close() {
	for _, p := range []*executor.Program{c.prog, c.eval.p} {
		if p != nil {
			p.Close()
		}
	}
}

// runEpoch runs a train step on every batch of the epoch, in order, each overlapped with the next
// batch: the loader's goroutine gathers (and tr.prepare packs) batch i+1 while step i runs, and
// its upload is queued after step i is launched and before step i is waited for. done sees each
// step's batch and outputs. It returns how long the loop waited for the loader's batches: the
// loader's time that the steps did not hide.
func runEpoch(tr trainer, loader *data.Loader, epoch int, done func(*data.Batch, map[string]*tensor.Tensor) error) (time.Duration, error) {
	next, stop := iter.Pull2(loader.Epoch(epoch))
	defer stop()
	var waited time.Duration
	pull := func() (*data.Batch, error, bool) {
		start := time.Now()
		b, err, ok := next()
		waited += time.Since(start)
		return b, err, ok
	}
	b, berr, ok := pull()
	if ok && berr == nil {
		berr = tr.upload(b)
	}
	for ok {
		if berr != nil {
			return waited, berr
		}
		if err := tr.launch(b); err != nil {
			return waited, fmt.Errorf("epoch %d, step %d: %v", epoch, b.Index+1, err)
		}
		nb, nerr, nok := pull()
		if nok && nerr == nil {
			if err := tr.upload(nb); err != nil {
				nerr = fmt.Errorf("epoch %d, step %d: %v", epoch, nb.Index+1, err)
			}
		}
		out, err := tr.wait()
		if err != nil {
			return waited, fmt.Errorf("epoch %d, step %d: %v", epoch, b.Index+1, err)
		}
		if err := done(b, out); err != nil {
			return waited, err
		}
		b, berr, ok = nb, nerr, nok
	}
	return waited, nil
}

// padRows returns t with its first dimension zero-padded to n.
func padRows(t *tensor.Tensor, n int) *tensor.Tensor {
	if t.Type.Shape[0] == n {
		return t
	}
	shape := t.Type.Shape.Clone()
	shape[0] = n
	p := tensor.New(ir.Type{DType: t.Type.DType, Shape: shape})
	copy(p.F, t.F)
	copy(p.I, t.I)
	return p
}
