package executor

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CUDA graphs of a program with dims. A recorded launch bakes in its arguments and grid, and a
// symbolic kernel's size argument and grid follow the run's sizes, so a recording replays only
// runs at the sizes it was recorded at: a bucket is the exact tuple of the dims' sizes. The first
// run at a tuple records the launches (and runs them), later runs at it replay the recording.
// At most GraphBuckets tuples are recorded; a run at another tuple past the limit launches its
// kernels one by one and records nothing, and no recording is evicted: a workload cycling through
// more sizes than the limit would otherwise record at every run, which costs more than launching
// the kernels (a serving batcher pads to a few batch sizes, which stay under it). A static
// program has one bucket, the empty tuple.

// DefaultGraphBuckets is the number of sets of sizes a program records graphs for unless
// SetGraphBuckets says otherwise.
const DefaultGraphBuckets = 16

// GraphUse says how a run with UseGraphs launched its kernels.
type GraphUse string

const (
	GraphCaptured GraphUse = "captured" // recorded at this run's sizes (and run)
	GraphReplayed GraphUse = "replayed" // a recording of an earlier run at the same sizes
	GraphFull     GraphUse = "full"     // new sizes past the bucket limit: kernel by kernel
)

// SetGraphBuckets sets how many sets of sizes the program records graphs for (at least 1).
// Recordings already made are kept.
func (p *Program) SetGraphBuckets(n int) error {
	if n < 1 {
		return fmt.Errorf("graph buckets: %d, want at least 1", n)
	}
	p.nBuckets = n
	return nil
}

// GraphBuckets returns the sets of sizes the program has recorded graphs for, each as
// "name=size,..." in the plan's dim order ("" for a static program's), followed by
// ",variant=I" (the index of the specialization it runs) for a plan with specializations, and
// the limit.
func (p *Program) GraphBuckets() ([]string, int) {
	return slices.Sorted(maps.Keys(p.buckets)), p.maxBuckets()
}

func (p *Program) maxBuckets() int {
	if p.nBuckets > 0 {
		return p.nBuckets
	}
	return DefaultGraphBuckets
}

// sizeBucket returns the current run's size tuple and whether a graph was recorded for it.
func (p *Program) sizeBucket() (string, bool) {
	var sb strings.Builder
	if p.sz != nil {
		for i, d := range p.plan.Dims {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "%s=%d", d.Name, p.sz.env[d.Name])
		}
	}
	if k := p.variantKey(); k != "" {
		fmt.Fprintf(&sb, ",%s", k)
	}
	return sb.String(), p.buckets[sb.String()]
}

func (p *Program) addBucket(b string) {
	if p.buckets == nil {
		p.buckets = map[string]bool{}
	}
	p.buckets[b] = true
}
