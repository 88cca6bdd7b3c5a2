package executor

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/ir"
)

// A train step split in two programs (the gradients, then the update, with the gradients
// all-reduced in between: data-parallel training) keeps one copy of the weights and moves no
// gradient: LoadSharing gives the second program the first's parameter buffers, Link makes an
// input read another program's output buffer, and Buffer gives a buffer's address to a
// collective that reduces it in place.

// LoadSharing loads a onto dev, which must address p's device memory, with p's buffers for the
// parameters a shares with p (by name; the types must match). Unlike Share it takes another
// artifact and allows Feedback on either program: a parameter one of them updates is the other's
// next value, so both rerun their bind-time kernels on every run. Runs of the two must not
// overlap. p must stay open while the new program is in use.
func (p *Program) LoadSharing(dev Device, a *artifact.Artifact) (*Program, error) {
	if p.mod == nil {
		return nil, fmt.Errorf("the program is closed")
	}
	if err := a.Plan.Validate(); err != nil {
		return nil, fmt.Errorf("launch plan: %v", err)
	}
	shared := map[string]*buffer{}
	for _, b := range a.Plan.Params {
		if mine := p.bufs[artifact.ArgParam][b.Name]; mine != nil {
			if mine.typ.String() != b.Type {
				return nil, fmt.Errorf("parameter %s is %s, %s in the program whose weights it shares", b.Name, b.Type, mine.typ)
			}
			shared[b.Name] = mine
		}
	}
	q, err := load(dev, a, shared)
	if err != nil {
		return nil, err
	}
	if len(shared) > 0 {
		p.bind.shared, q.bind.shared = true, true
		p.bind.everyRun, q.bind.everyRun = true, true
	}
	return q, nil
}

// Link makes p's input read the buffer of from's output (by the model's name) or input name, on the same device
// memory, in place: Run no longer takes the input, and p reads whatever from's last run left
// there (a gradient from.Run computed, reduced in between). An output so linked stays on the
// device: from's Run no longer copies it to the host (where it would race with work on it
// between the runs). from must stay open while p is in use. Link before Feedback and Stage.
func (p *Program) Link(input string, from *Program, name string) error {
	b := p.bufs[artifact.ArgInput][input]
	if b == nil {
		return fmt.Errorf("link: the model has no input %s", input)
	}
	src, _ := from.outputBuffer(name)
	output := src != nil
	if src == nil {
		src = from.bufs[artifact.ArgInput][name]
	}
	if src == nil {
		return fmt.Errorf("link: the other program has no output or input %s", name)
	}
	if !src.typ.Equal(b.typ) {
		return fmt.Errorf("link: input %s is %s, %s is %s", input, b.typ, name, src.typ)
	}
	if i := slices.Index(p.allocs, b.ptr); i >= 0 {
		p.allocs = slices.Delete(p.allocs, i, i+1)
		if err := p.dev.Free(b.ptr); err != nil {
			return err
		}
		p.mem.InputBytes -= int64(b.typ.Bytes())
	}
	p.bufs[artifact.ArgInput][input] = src
	if p.linked == nil {
		p.linked = map[string]bool{}
	}
	p.linked[input] = true
	if output {
		if from.onDevice == nil {
			from.onDevice = map[string]bool{}
		}
		from.onDevice[name] = true
	}
	return nil
}

// Buffer returns the device address and type of an output (by the model's name), input or
// parameter buffer (an output's, where a name is both), for calls that work on device memory in place (a
// collective's all-reduce between runs).
func (p *Program) Buffer(name string) (Ptr, ir.Type, error) {
	b, _ := p.outputBuffer(name)
	if b == nil {
		b = p.lookup(name)
	}
	if b == nil {
		return 0, ir.Type{}, fmt.Errorf("the model has no buffer %s", name)
	}
	return b.ptr, b.typ, nil
}

// OnLaunch makes f run after each kernel of a run is queued (bind-time kernels aside), with the
// kernel's index in the plan; an error from f stops the launch with it. f queues work between
// two kernels: an all-reduce of gradients as soon as the kernels writing them are queued
// (LastUse), while the rest of the backward pass runs. With f set the program launches kernel by
// kernel, never as a recorded CUDA graph. nil removes it.
func (p *Program) OnLaunch(f func(kernel int) error) { p.onLaunch = f }

// LastUse returns the index in the plan of the last kernel that takes the output buffer name as
// an argument: after it is queued, no kernel of the run touches the buffer. It is an error for an
// output no kernel writes (one that is an input or parameter).
func (p *Program) LastUse(name string) (int, error) {
	b, buf := p.outputBuffer(name)
	if b == nil || b != p.bufs[artifact.ArgOutput][buf] {
		return 0, fmt.Errorf("the model has no output %s with a buffer of its own", name)
	}
	last := -1
	for j, k := range p.plan.Kernels {
		if k.BindTime {
			continue // they run before the others, and not every run
		}
		for _, a := range k.Args {
			if a.Kind == artifact.ArgOutput && a.Name == buf {
				last = j
			}
		}
	}
	if last < 0 {
		return 0, fmt.Errorf("no kernel writes output %s", name)
	}
	return last, nil
}

// outputBuffer returns the buffer of the model's output name (an input's or a parameter's where
// the output is one) and the plan's name for it; nil if the model has no such output.
func (p *Program) outputBuffer(name string) (*buffer, string) {
	for i, o := range p.plan.Outputs {
		if p.plan.OutputNames[i] != name {
			continue
		}
		return p.output(o.Name), o.Name
	}
	return nil, ""
}
