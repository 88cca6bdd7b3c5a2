package executor

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/ir"
)

// Image is a tensor's memory image as the device holds it: Type's elements, little-endian, in
// row-major order (what tensor.Tensor.Bytes returns).
type Image struct {
	Type ir.Type
	Data []byte
}

// RunImages runs once on inputs given as memory images, which are copied to the device as they
// are, and copies each output named in outputs into the memory given for it (exactly the output's
// size); outputs not named are not read. It checks ctx before every kernel as RunContext does.
// It is the run for callers whose data has the device's layout already (a []float32 seen as
// bytes), with no conversion on the host either way. Programs whose inputs are prefetched or
// kept on the device (Feedback) run with Run.
func (p *Program) RunImages(ctx context.Context, inputs map[string]Image, outputs map[string][]byte) ([]KernelRun, error) {
	if err := p.staticOnly("running on memory images"); err != nil {
		return nil, err
	}
	switch {
	case p.pending != nil:
		return nil, fmt.Errorf("the previous run was launched and not waited for")
	case p.pf.staged != nil:
		return nil, fmt.Errorf("inputs were prefetched for this run: run them with Run(nil)")
	case len(p.feedback) > 0:
		return nil, fmt.Errorf("the program keeps state on the device (Feedback): run it with Run")
	}
	for _, b := range p.bufs[artifact.ArgParam] {
		if !b.bound {
			return nil, fmt.Errorf("parameter %s has no value (bind weights first)", b.name)
		}
	}
	outBufs, err := p.outputBuffers(outputs)
	if err != nil {
		return nil, err
	}
	types := make(map[string]*ir.Type, len(inputs))
	for name, im := range inputs {
		types[name] = &im.Type
	}
	if err := p.checkTypes(artifact.ArgInput, types); err != nil {
		return nil, err
	}
	for name, im := range inputs {
		if n := im.Type.Bytes(); len(im.Data) != n {
			return nil, fmt.Errorf("input %s: %s needs %d bytes, have %d", name, im.Type, n, len(im.Data))
		}
		if err := p.dev.Write(p.bufs[artifact.ArgInput][name].ptr, im.Data); err != nil {
			return nil, fmt.Errorf("copying input %s to the device: %v", name, err)
		}
	}
	res := &Result{}
	if err := p.launchAll(ctx, res, nil); err != nil {
		return nil, err
	}
	if err := errors.Join(p.markRead(), p.dev.Sync()); err != nil {
		return nil, err
	}
	for name, dst := range outputs {
		if err := p.dev.Read(dst, outBufs[name].ptr); err != nil {
			return nil, fmt.Errorf("copying output %s from the device: %v", name, err)
		}
	}
	return res.Kernels, nil
}

// outputBuffers finds the buffer of every output named in outputs and checks the memory given
// for it has the output's size.
func (p *Program) outputBuffers(outputs map[string][]byte) (map[string]*buffer, error) {
	bufs := map[string]*buffer{}
	for i, o := range p.plan.Outputs {
		name := p.plan.OutputNames[i]
		dst, ok := outputs[name]
		if !ok {
			continue
		}
		if int64(len(dst)) != o.Size {
			return nil, fmt.Errorf("output %s: %s needs %d bytes, the memory given has %d", name, o.Type, o.Size, len(dst))
		}
		bufs[name] = p.output(o.Name)
	}
	if len(bufs) < len(outputs) {
		var unknown []string
		for name := range outputs {
			if bufs[name] == nil {
				unknown = append(unknown, name)
			}
		}
		sort.Strings(unknown)
		return nil, fmt.Errorf("the model has no output named %v", unknown)
	}
	return bufs, nil
}
