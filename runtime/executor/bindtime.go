package executor

import (
	"fmt"

	"github.com/gcomp/gcomp/artifact"
)

// bindTime says when the plan's bind-time kernels (artifact.Kernel.BindTime: they read
// parameters only, and their outputs stay in the arena across runs) must run again.
type bindTime struct {
	current  bool // their outputs are up to date: they ran, and no parameter was written since
	everyRun bool // Feedback replaces parameters after every run (a train step)
	shared   bool // another program with these parameter buffers may write them (LoadSharing)
}

// feedsParams reports whether a Feedback binding replaces a parameter.
func (p *Program) feedsParams() bool {
	for _, dst := range p.feedback {
		if p.bufs[artifact.ArgParam][dst.name] == dst {
			return true
		}
	}
	return false
}

// launchBindTime launches the bind-time kernels, in plan order and before the run's other
// kernels, when the parameters they read changed since they last ran; otherwise their outputs
// are still in the arena.
func (p *Program) launchBindTime(args [][]Ptr, res *Result) error {
	if p.bind.current && !p.bind.everyRun {
		return nil
	}
	first := true // as in launchEach: the parameters just written wait for nothing in flight
	for j, k := range p.plan.Kernels {
		if !k.BindTime {
			continue
		}
		c, err := p.mod.Launch(k.Entry, LaunchConfig{Grid: k.Grid, Block: k.Block, SharedBytes: k.SharedBytes, PDL: k.PDL && !first}, args[j])
		first = false
		if err != nil {
			return fmt.Errorf("kernel %s (grid %v, block %v): %w", k.Name, k.Grid, k.Block, err)
		}
		res.Kernels = append(res.Kernels, KernelRun{Name: k.Name, Grid: k.Grid, Block: k.Block, Counters: c})
	}
	p.bind.current = true
	return nil
}
