package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Graphs is implemented by devices that can record the launches of a run once and replay them
// with one call (CUDA graphs): BeginCapture makes the launches that follow be recorded instead
// of run, EndCapture returns them as a Replay. Nothing but launches may be issued in between.
type Graphs interface {
	BeginCapture() error
	EndCapture() (Replay, error)
}

// Replay is a recorded sequence of launches: Launch queues all of them again, with the
// arguments they were recorded with, after the work issued before.
type Replay interface {
	Launch() error
	Close() error
}

// BinaryLoader is implemented by devices that load precompiled images of a module (cubins, by
// architecture): LoadBinaries loads the one that runs on the device, or else the PTX.
type BinaryLoader interface {
	LoadBinaries(ptx []byte, cubins map[string][]byte) (Module, error)
}

// UseGraphs makes every run launch its kernels as one replayed graph where the device records
// graphs (CUDA): the first run with a set of buffers records the launches, later runs with the
// same buffers replay them. Prefetched inputs and train-step state trade buffers between runs,
// so a program keeps one recording per set of kernel arguments it has seen (two, in practice).
// A program with dims records one per set of sizes too, up to a limit (graphsizes.go).
// It reports whether the device supports graphs; on others, runs launch kernel by kernel.
func (p *Program) UseGraphs(on bool) bool {
	_, ok := p.dev.(Graphs)
	p.graphs = on && ok
	return ok
}

// launchGraph runs the plan's kernels through a replay recorded for these arguments, recording
// it first if there is none.
func (p *Program) launchGraph(ctx context.Context, args [][]Ptr, res *Result) error {
	if err := ctx.Err(); err != nil {
		return stopped(p.plan, 0, err)
	}
	var key strings.Builder
	key.WriteString(p.variantKey()) // two variants may pass the same arguments to other entries
	for _, a := range args {
		fmt.Fprint(&key, a, ";")
	}
	r := p.replays[key.String()]
	bucket, captured := p.sizeBucket()
	if r == nil && !captured && len(p.buckets) >= p.maxBuckets() {
		// A new set of sizes past the limit runs kernel by kernel (graphsizes.go).
		res.Graph = GraphFull
		return p.launchEach(ctx, args, res)
	}
	res.Graph = GraphReplayed
	if r == nil {
		res.Graph = GraphCaptured
		g := p.dev.(Graphs)
		if err := g.BeginCapture(); err != nil {
			return fmt.Errorf("recording a CUDA graph: %w", err)
		}
		err := p.launchEach(context.Background(), args, nil)
		rec, endErr := g.EndCapture()
		if err = errors.Join(err, endErr); err != nil {
			if rec != nil {
				rec.Close()
			}
			return fmt.Errorf("recording a CUDA graph: %w", err)
		}
		if p.replays == nil {
			p.replays = map[string]Replay{}
		}
		r = rec
		p.replays[key.String()] = r
		p.addBucket(bucket)
	}
	if err := r.Launch(); err != nil {
		return fmt.Errorf("replaying the CUDA graph of %d kernels: %w", len(args), err)
	}
	for _, k := range p.plan.Kernels {
		if !k.BindTime {
			res.Kernels = append(res.Kernels, KernelRun{Name: k.Name, Grid: p.grid(k), Block: k.Block})
		}
	}
	return nil
}

// closeReplays frees the recorded graphs.
func (p *Program) closeReplays() error {
	var errs []error
	for _, r := range p.replays {
		errs = append(errs, r.Close())
	}
	p.replays, p.buckets = nil, nil
	return errors.Join(errs...)
}
