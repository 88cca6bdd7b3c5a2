package train

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/collective"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// The ranks' side of data-parallel training: the goroutine per rank, the broadcast, the
// bucketed all-reduce of the gradients, the sums of losses and metrics over the ranks.

// ddp is a data-parallel run: this process's ranks and their communicators.
type ddp struct {
	ranks []ddpRank
	comms []collective.Comm
	mems  []rankMemory
	names []string       // each rank's name in errors: "rank 1 (sim)"
	stats []executor.Ptr // each rank's scratch for reducing losses and metrics (8 float64)
	// streams are the ranks' devices' communication streams (0 where a device has none) and
	// ordered the devices that have them: the collectives go there, each after the compute work
	// that produced its buffers, and the compute work after them waits for them.
	streams []collective.Stream
	ordered []commStreams
	// buckets are the trained parameters in reverse order, cut where a bucket would pass the cap.
	buckets [][]string
	// issued is how many buckets each rank has issued in the current step.
	issued []int
	// symbolic is whether the step runs over a symbolic batch (ddp_sym.go); weighted whether
	// its gradients graph takes GradWeightName.
	symbolic, weighted bool
}

// commStreams is a device with a communication stream beside its compute stream (runtime/cuda's).
type commStreams interface {
	CommStream() (uintptr, error)
	CommAfterCompute() error
	ComputeAfterComm() error
}

// afterCompute orders rank i's next collectives after the compute work queued so far.
func (d *ddp) afterCompute(i int) error {
	if s := d.ordered[i]; s != nil {
		return s.CommAfterCompute()
	}
	return nil
}

// beforeCompute orders rank i's next compute work after the collectives queued so far.
func (d *ddp) beforeCompute(i int) error {
	if s := d.ordered[i]; s != nil {
		return s.ComputeAfterComm()
	}
	return nil
}

// each runs f for every local rank, each in a goroutine of its own. The first rank to fail
// aborts its communicator, so the others' collectives fail naming it instead of waiting; the
// error returned is that first failure, naming its rank.
func (d *ddp) each(f func(i int) error) error {
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for i := range d.ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(i); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("%s: %w", d.names[i], err)
				}
				mu.Unlock()
				d.comms[i].Abort()
			}
		}()
	}
	wg.Wait()
	return first
}

// broadcast copies rank 0's parameters and optimizer state to every rank.
func (d *ddp) broadcast(i int) error {
	bufs, err := d.ranks[i].replicated()
	if err != nil {
		return err
	}
	c := d.comms[i]
	if err := d.afterCompute(i); err != nil {
		return err
	}
	if err := c.GroupStart(); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(bufs)) {
		b := bufs[name]
		if err := c.Broadcast(b.ptr, b.ptr, b.typ.Shape.NumElements(), b.typ.DType, 0, d.streams[i]); err != nil {
			c.GroupEnd()
			return fmt.Errorf("broadcasting %s: %w", name, err)
		}
	}
	if err := c.GroupEnd(); err != nil {
		return err
	}
	if err := d.beforeCompute(i); err != nil {
		return err
	}
	if err := c.Wait(); err != nil {
		return err
	}
	return d.ranks[i].sync()
}

// issueBucket queues the averaging of bucket k of rank i's gradients over the ranks, its
// all-reduces as one group.
func (d *ddp) issueBucket(i, k int) error {
	c := d.comms[i]
	if err := d.afterCompute(i); err != nil {
		return err
	}
	if err := c.GroupStart(); err != nil {
		return err
	}
	for _, p := range d.buckets[k] {
		b, err := d.ranks[i].grad(p)
		if err == nil {
			err = c.AllReduce(b.ptr, b.ptr, b.typ.Shape.NumElements(), b.typ.DType, collective.Avg, d.streams[i])
		}
		if err != nil {
			c.GroupEnd()
			return fmt.Errorf("all-reducing the gradient of %s: %w", p, err)
		}
	}
	return c.GroupEnd()
}

// allReduceGrads averages rank i's gradients over the ranks: it issues the buckets the backward
// pass did not issue (all of them, without overlap) in order and waits for every one.
func (d *ddp) allReduceGrads(i int) error {
	for ; d.issued[i] < len(d.buckets); d.issued[i]++ {
		if err := d.issueBucket(i, d.issued[i]); err != nil {
			return err
		}
	}
	// The optimizer's kernels wait for the last bucket: on the device, where the communicator's
	// calls are ordered on its streams (the host does not wait); else the host waits for them.
	if err := d.beforeCompute(i); err != nil {
		return err
	}
	if d.ordered[i] != nil && collective.StreamOrdered(d.comms[i]) {
		return nil
	}
	if err := d.comms[i].Wait(); err != nil {
		return fmt.Errorf("all-reducing the gradients: %w", err)
	}
	return nil
}

// overlap makes a compiled rank issue each bucket during the backward pass, right after the last
// kernel that writes one of its gradients is queued, so that the bucket is averaged while the
// rest of backward computes. The buckets still go in their order on every rank: a bucket whose
// gradients are ready before an earlier bucket's goes with that one.
func (d *ddp) overlap(i int, c *compiledRank) error {
	at := make([]int, len(d.buckets)) // the kernel after which bucket k goes
	for k, bucket := range d.buckets {
		for _, p := range bucket {
			j, err := c.grd.LastUse(GradPrefix + p)
			if err != nil {
				return err
			}
			at[k] = max(at[k], j)
		}
		if k > 0 {
			at[k] = max(at[k], at[k-1])
		}
	}
	c.grd.OnLaunch(func(j int) error {
		for ; d.issued[i] < len(d.buckets) && at[d.issued[i]] <= j; d.issued[i]++ {
			if err := d.issueBucket(i, d.issued[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return nil
}

// reduce all-reduces vals over the ranks with op, through rank i's scratch.
func (d *ddp) reduce(i int, vals []float64, op collective.Op) ([]float64, error) {
	buf := make([]byte, 8*len(vals))
	for k, v := range vals {
		binary.LittleEndian.PutUint64(buf[8*k:], math.Float64bits(v))
	}
	mem, p, c := d.mems[i], d.stats[i], d.comms[i]
	if err := mem.Write(p, buf); err != nil {
		return nil, err
	}
	if err := d.afterCompute(i); err != nil {
		return nil, err
	}
	if err := c.AllReduce(p, p, len(vals), ir.F64, op, d.streams[i]); err != nil {
		return nil, err
	}
	if err := d.beforeCompute(i); err != nil {
		return nil, err
	}
	if err := c.Wait(); err != nil {
		return nil, err
	}
	if err := mem.Read(buf, p); err != nil {
		return nil, err
	}
	out := make([]float64, len(vals))
	for k := range out {
		out[k] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*k:]))
	}
	return out, nil
}

func (d *ddp) close() {
	for i, r := range d.ranks {
		if r != nil {
			r.close()
		}
		if d.stats[i] != 0 {
			d.mems[i].Free(d.stats[i])
		}
	}
	for _, c := range d.comms {
		c.Close()
	}
}

// reduceMeter sums s over the ranks through rank i.
func (d *ddp) reduceMeter(i int, s *evalTotals) (*evalTotals, error) {
	mt := s.mt
	v, err := d.reduce(i, []float64{s.loss, s.weight, float64(mt.correct), float64(mt.counted), mt.sumSq, mt.sumAbs, mt.elems}, collective.Sum)
	if err != nil {
		return nil, err
	}
	out := &evalTotals{loss: v[0], weight: v[1], mt: &meter{l: mt.l, correct: int(v[2]), counted: int(v[3]), sumSq: v[4], sumAbs: v[5], elems: v[6]}}
	return out, nil
}

// makeBuckets cuts the parameters, last first, into buckets of at most limit bytes, the first of
// at most FirstBucketBytes as DDP's (a larger parameter is a bucket of its own).
func makeBuckets(g *ir.Graph, params []string, limit int64) [][]string {
	var out [][]string
	var cur []string
	var size int64
	for _, p := range slices.Backward(params) {
		n := int64(g.Lookup(p).Type.Bytes())
		capBytes := limit
		if len(out) == 0 {
			capBytes = min(limit, FirstBucketBytes)
		}
		if len(cur) > 0 && size+n > capBytes {
			out, cur, size = append(out, cur), nil, 0
		}
		cur, size = append(cur, p), size+n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// shardRows returns rows [lo, hi) of t.
func shardRows(t *tensor.Tensor, lo, hi int) *tensor.Tensor {
	per := t.Len() / t.Type.Shape[0]
	shape := t.Type.Shape.Clone()
	shape[0] = hi - lo
	s := &tensor.Tensor{Type: ir.Type{DType: t.Type.DType, Shape: shape}}
	if t.F != nil {
		s.F = slices.Clone(t.F[lo*per : hi*per])
	}
	if t.I != nil {
		s.I = slices.Clone(t.I[lo*per : hi*per])
	}
	return s
}
