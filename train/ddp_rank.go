package train

import (
	"fmt"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/collective"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// rankMemory is the memory of a rank's device, where its communicator reduces: the executor's
// device, or HostMemory for the reference interpreter.
type rankMemory interface {
	collective.Memory
	Alloc(n int64) (executor.Ptr, error)
	Free(p executor.Ptr) error
}

// devBuf is a buffer in a rank's memory.
type devBuf struct {
	ptr executor.Ptr
	typ ir.Type
}

// ddpRank runs a split step on one rank's device, keeping the weights and state there.
type ddpRank interface {
	// backward runs the gradients' graph on the rank's shard, or on a device queues it; the
	// gradients stay in the rank's memory (grad) for the all-reduce. outputs returns its
	// outputs, waiting for them: the host reads nothing of a step before its update is queued,
	// so that the update waits for the last all-reduce on the device alone.
	backward(in map[string]*tensor.Tensor) error
	outputs() (map[string]*tensor.Tensor, error)
	// grad is the buffer of a trained parameter's gradient.
	grad(param string) (devBuf, error)
	// update runs the optimizer on the gradients in the grad buffers.
	update() (map[string]*tensor.Tensor, error)
	// replicated are the buffers every rank holds alike, by name: every parameter and the
	// update's state. sync, after they changed in place, brings the rank's copies up to date.
	replicated() (map[string]devBuf, error)
	sync() error
	// weights returns every parameter and the full step's state (this rank's random key).
	weights() (params, state map[string]*tensor.Tensor, err error)
	runEval(in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error)
	close()
}

// rankKey gives rank r its own random numbers (dropout masks): the key a single device trained
// with seed+r (mod 2³¹) would have at the same step. Rank 0's is the single-device key.
func rankKey(state map[string]*tensor.Tensor, r int) map[string]*tensor.Tensor {
	k, ok := state[frontend.RandomKeyName]
	if !ok || r == 0 {
		return state
	}
	out := make(map[string]*tensor.Tensor, len(state))
	for name, t := range state {
		out[name] = t
	}
	key := k.Clone()
	v := uint64(key.I[0])
	key.I[0] = int64(((v>>32+uint64(r))%(1<<31))<<32 | v&0xffffffff)
	out[frontend.RandomKeyName] = key
	return out
}

// only returns the entries of m named by vs.
func only(m map[string]*tensor.Tensor, vs []*ir.Value) map[string]*tensor.Tensor {
	out := make(map[string]*tensor.Tensor, len(vs))
	for _, v := range vs {
		out[v.Name] = m[v.Name]
	}
	return out
}

// onlyState returns the entries of m that are state of s.
func onlyState(m map[string]*tensor.Tensor, s *StepGraph) map[string]*tensor.Tensor {
	out := make(map[string]*tensor.Tensor, len(s.State))
	for _, v := range s.State {
		out[v.Name] = m[v.Name]
	}
	return out
}

// refRank runs the split step on the reference interpreter; its gradients live in a HostMemory.
type refRank struct {
	s             *SplitStep
	m             *Model
	mem           *HostMemory
	params, state map[string]*tensor.Tensor
	grads         map[string]devBuf
	bufs          map[string]devBuf         // replicated's copies, while a broadcast uses them
	out           map[string]*tensor.Tensor // backward's
}

func newRefRank(s *SplitStep, m *Model, mem *HostMemory, params, state map[string]*tensor.Tensor) (*refRank, error) {
	r := &refRank{s: s, m: m, mem: mem, params: map[string]*tensor.Tensor{}, state: map[string]*tensor.Tensor{}, grads: map[string]devBuf{}}
	for k, v := range params {
		r.params[k] = v.Clone()
	}
	for k, v := range state {
		r.state[k] = v.Clone()
	}
	for _, in := range s.Update.Graph.Inputs() {
		if _, ok := r.state[in.Name]; ok {
			continue
		}
		p, err := mem.Alloc(int64(in.Type.Bytes()))
		if err != nil {
			return nil, err
		}
		r.grads[in.Name] = devBuf{p, in.Type}
	}
	return r, nil
}

func (r *refRank) outputs() (map[string]*tensor.Tensor, error) { return r.out, nil }

func (r *refRank) backward(in map[string]*tensor.Tensor) error {
	ins := map[string]*tensor.Tensor{}
	for k, v := range in {
		ins[k] = v
	}
	for _, v := range r.s.Grad.Graph.Inputs() {
		if t, ok := r.state[v.Name]; ok {
			ins[v.Name] = t // the random key, the loss scale
		}
	}
	out, err := ref.Run(r.s.Grad.Graph, ins, r.params)
	if err != nil {
		return err
	}
	r.apply(r.s.Grad, out)
	for name, b := range r.grads {
		if err := r.mem.Write(b.ptr, out[name].Bytes()); err != nil {
			return err
		}
	}
	r.out = out
	return nil
}

// apply makes s's "new." outputs the next values.
func (r *refRank) apply(s *StepGraph, out map[string]*tensor.Tensor) {
	for o, name := range s.StateBindings {
		if _, ok := r.params[name]; ok {
			r.params[name] = out[o]
		} else {
			r.state[name] = out[o]
		}
	}
}

func (r *refRank) grad(param string) (devBuf, error) {
	b, ok := r.grads[GradPrefix+param]
	if !ok {
		return devBuf{}, fmt.Errorf("no gradient of %s", param)
	}
	return b, nil
}

func (r *refRank) update() (map[string]*tensor.Tensor, error) {
	ins := onlyState(r.state, r.s.Update)
	for name, b := range r.grads {
		data := make([]byte, b.typ.Bytes())
		if err := r.mem.Read(data, b.ptr); err != nil {
			return nil, err
		}
		t, err := tensor.FromBytes(b.typ, data)
		if err != nil {
			return nil, err
		}
		ins[name] = t
	}
	out, err := ref.Run(r.s.Update.Graph, ins, only(r.params, r.s.Update.Graph.Params()))
	if err != nil {
		return nil, err
	}
	r.apply(r.s.Update, out)
	return out, nil
}

// replicated copies the values into host buffers, which sync reads back after the broadcast.
func (r *refRank) replicated() (map[string]devBuf, error) {
	r.bufs = map[string]devBuf{}
	add := func(name string, t *tensor.Tensor) error {
		p, err := r.mem.Alloc(int64(t.Type.Bytes()))
		if err != nil {
			return err
		}
		r.bufs[name] = devBuf{p, t.Type}
		return r.mem.Write(p, t.Bytes())
	}
	for name, t := range r.params {
		if err := add(name, t); err != nil {
			return nil, err
		}
	}
	for _, v := range r.s.Update.State {
		if err := add(v.Name, r.state[v.Name]); err != nil {
			return nil, err
		}
	}
	return r.bufs, nil
}

func (r *refRank) sync() error {
	defer func() {
		for _, b := range r.bufs {
			r.mem.Free(b.ptr)
		}
		r.bufs = nil
	}()
	for name, b := range r.bufs {
		data := make([]byte, b.typ.Bytes())
		if err := r.mem.Read(data, b.ptr); err != nil {
			return err
		}
		t, err := tensor.FromBytes(b.typ, data)
		if err != nil {
			return err
		}
		if _, ok := r.params[name]; ok {
			r.params[name] = t
		} else {
			r.state[name] = t
		}
	}
	return nil
}

func (r *refRank) weights() (map[string]*tensor.Tensor, map[string]*tensor.Tensor, error) {
	return r.params, r.state, nil
}

func (r *refRank) runEval(in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	return ref.Run(r.m.Eval, in, r.params)
}

func (r *refRank) close() {
	for _, b := range r.grads {
		r.mem.Free(b.ptr)
	}
}

// splitArtifacts are a split step's graphs and the evaluation compiled, once for every rank.
type splitArtifacts struct {
	grad, update, eval *artifact.Artifact
}

// compiledRank runs the split step on an executor device: the update's program holds the
// trained parameters and the optimizer state, the gradients' program shares its parameter
// buffers and writes the gradients into buffers the update's program reads (Link), so a step
// moves nothing but the batch in and the loss and prediction out.
type compiledRank struct {
	s        *SplitStep
	m        *Model
	grd, upd *executor.Program
	eval     evalProgram
}

func newCompiledRank(dev executor.Device, s *SplitStep, m *Model, a *splitArtifacts, params, state map[string]*tensor.Tensor, graphs bool) (*compiledRank, error) {
	c := &compiledRank{s: s, m: m}
	if err := c.load(dev, a, params, state); err != nil {
		c.close()
		return nil, err
	}
	c.grd.UseGraphs(graphs)
	c.upd.UseGraphs(graphs)
	return c, nil
}

func (c *compiledRank) load(dev executor.Device, a *splitArtifacts, params, state map[string]*tensor.Tensor) error {
	var err error
	if c.upd, err = executor.Load(dev, a.update); err != nil {
		return err
	}
	if err := c.upd.SetParams(only(params, c.s.Update.Graph.Params())); err != nil {
		return err
	}
	if c.grd, err = c.upd.LoadSharing(dev, a.grad); err != nil {
		return err
	}
	if err := c.grd.SetParams(params); err != nil {
		return err
	}
	if c.s.Update.LossScale != nil {
		if err := c.grd.Link(ScaleName, c.upd, ScaleName); err != nil {
			return err
		}
	}
	for _, p := range c.s.Update.Params {
		if err := c.upd.Link(GradPrefix+p, c.grd, GradPrefix+p); err != nil {
			return err
		}
	}
	for _, st := range []struct {
		p *executor.Program
		s *StepGraph
	}{{c.upd, c.s.Update}, {c.grd, c.s.Grad}} {
		if err := st.p.Feedback(st.s.StateBindings); err != nil {
			return err
		}
		if err := st.p.SetState(onlyState(state, st.s)); err != nil {
			return err
		}
	}
	c.eval.p, err = executor.Load(dev, a.eval)
	return err
}

func (c *compiledRank) backward(in map[string]*tensor.Tensor) error {
	c.eval.fresh = false
	return c.grd.Launch(in)
}

func (c *compiledRank) outputs() (map[string]*tensor.Tensor, error) {
	res, err := c.grd.Wait()
	if err != nil {
		return nil, err
	}
	return res.Outputs, nil
}

func (c *compiledRank) grad(param string) (devBuf, error) {
	p, t, err := c.grd.Buffer(GradPrefix + param)
	return devBuf{p, t}, err
}

func (c *compiledRank) update() (map[string]*tensor.Tensor, error) {
	res, err := c.upd.Run(map[string]*tensor.Tensor{})
	if err != nil {
		return nil, err
	}
	return res.Outputs, nil
}

func (c *compiledRank) replicated() (map[string]devBuf, error) {
	bufs := map[string]devBuf{}
	for _, p := range c.s.Grad.Graph.Params() {
		ptr, t, err := c.grd.Buffer(p.Name)
		if err != nil {
			return nil, err
		}
		bufs[p.Name] = devBuf{ptr, t}
	}
	for _, v := range c.s.Update.State {
		ptr, t, err := c.upd.Buffer(v.Name)
		if err != nil {
			return nil, err
		}
		bufs[v.Name] = devBuf{ptr, t}
	}
	return bufs, nil
}

func (c *compiledRank) sync() error { c.eval.fresh = false; return nil }

func (c *compiledRank) weights() (map[string]*tensor.Tensor, map[string]*tensor.Tensor, error) {
	params, state := map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for _, p := range c.s.Grad.Graph.Params() {
		t, err := c.grd.Read(p.Name)
		if err != nil {
			return nil, nil, err
		}
		params[p.Name] = t
	}
	for _, st := range []struct {
		p *executor.Program
		s *StepGraph
	}{{c.upd, c.s.Update}, {c.grd, c.s.Grad}} {
		for _, v := range st.s.State {
			t, err := st.p.Read(v.Name)
			if err != nil {
				return nil, nil, err
			}
			state[v.Name] = t
		}
	}
	return params, state, nil
}

func (c *compiledRank) runEval(in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	return c.eval.run(in, c.weights)
}

// close closes the programs, the gradients' (which reads the update's buffers) first.
func (c *compiledRank) close() {
	for _, p := range []*executor.Program{c.eval.p, c.grd, c.upd} {
		if p != nil {
			p.Close()
		}
	}
}
