package executor

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gcomp/gcomp/tensor"
)

// BenchResult is the timing of repeated runs: per run (wall time around Run,
// copies included) and per kernel (the device's own measure: CUDA events on a
// GPU, the simulator's wall clock on sim).
type BenchResult struct {
	Runs    []time.Duration
	Kernels []KernelBench // in launch order
}

// KernelBench is one kernel's times over the runs, with the counters of the last.
type KernelBench struct {
	Name     string
	Times    []time.Duration
	Counters *Counters
}

// Bench runs p n times on inputs (the caller does any warm-up).
func Bench(p *Program, inputs map[string]*tensor.Tensor, n int) (*BenchResult, error) {
	b := &BenchResult{}
	for range n {
		start := time.Now()
		res, err := p.Run(inputs)
		if err != nil {
			return nil, err
		}
		b.Runs = append(b.Runs, time.Since(start))
		if b.Kernels == nil {
			b.Kernels = make([]KernelBench, len(res.Kernels))
		}
		for i, k := range res.Kernels {
			kb := &b.Kernels[i]
			kb.Name, kb.Counters = k.Name, k.Counters
			if k.Counters != nil {
				kb.Times = append(kb.Times, k.Counters.Time)
			}
		}
	}
	return b, nil
}

// Median and Min of a non-empty list of durations (zero for an empty one).
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func Min(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Min(ds)
}

// WriteTable prints the per-run and per-kernel medians and minimums.
func (b *BenchResult) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-34s %12s %12s %12s %10s\n", "", "median ms", "min ms", "warp insts", "coalesced")
	for _, k := range b.Kernels {
		if k.Counters == nil && len(k.Times) == 0 {
			continue // not measured one by one (a replayed CUDA graph)
		}
		var insts int64
		coal := "-"
		if c := k.Counters; c != nil {
			insts = c.WarpInsts
			coal = fmt.Sprintf("%.1f%%", 100*c.Coalescing())
		}
		fmt.Fprintf(w, "%-34s %12.3f %12.3f %12d %10s\n", k.Name, ms(Median(k.Times)), ms(Min(k.Times)), insts, coal)
	}
	fmt.Fprintf(w, "%-34s %12.3f %12.3f\n", "per run (with copies)", ms(Median(b.Runs)), ms(Min(b.Runs)))
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
