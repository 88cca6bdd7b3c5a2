package passes

import (
	"fmt"
	"slices"
)

// PersistRun is a run of consecutive kernels of the schedule that the persist pass made one
// persistent kernel of: Len kernels from index Start (in the schedule the pass received), with
// their labels. A graph with dims is built at its bound, where the pass chooses its runs; its
// costs at smaller sizes are those of the same runs (FusionOptions.PersistRuns), which the pass
// left to itself might choose otherwise there, as more kernels fit its bounds.
type PersistRun struct {
	Start, Len int
	Labels     []string
}

// runOf records the run persistent kernel k was made of, from schedule index start.
func runOf(k *Kernel, start int) PersistRun {
	r := PersistRun{Start: start, Len: len(k.Stages)}
	for _, s := range k.Stages {
		r.Labels = append(r.Labels, s.label)
	}
	return r
}

// persistRuns forms exactly runs, each checked against the kernels it names (their labels, and
// the bounds a stage must fit), or says why the schedule does not have them.
func persistRuns(kg *KernelGraph, runs []PersistRun, opt FusionOptions) error {
	readers := map[*Buffer][]int{}
	for i, k := range kg.Kernels {
		for _, b := range k.Reads {
			readers[b] = append(readers[b], i)
		}
	}
	var out []*Kernel
	next := 0
	for _, r := range runs {
		if r.Start < next || r.Len < 2 || r.Start+r.Len > len(kg.Kernels) {
			return fmt.Errorf("persistent run of %d kernels at %d: the schedule has %d kernels", r.Len, r.Start, len(kg.Kernels))
		}
		run := kg.Kernels[r.Start : r.Start+r.Len]
		var labels []string
		for _, k := range run {
			labels = append(labels, k.label)
			if !persistable(k, opt) {
				return fmt.Errorf("persistent run at %d: kernel %s cannot be a stage here", r.Start, k.Name)
			}
		}
		if !slices.Equal(labels, r.Labels) {
			return fmt.Errorf("persistent run at %d: the schedule has kernels %v there, the run %v", r.Start, labels, r.Labels)
		}
		p := planRun(run, r.Start, readers, opt)
		if p == nil {
			return fmt.Errorf("persistent run at %d (%v) does not fit the bounds", r.Start, labels)
		}
		out = append(append(out, kg.Kernels[next:r.Start]...), persistent(run, p))
		next = r.Start + r.Len
	}
	kg.Kernels = append(out, kg.Kernels[next:]...)
	kg.PersistRuns = runs
	kg.renumber()
	return nil
}
