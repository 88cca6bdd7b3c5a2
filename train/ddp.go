package train

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/collective"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// DefaultBucketBytes caps a gradient bucket: DistributedDataParallel's bucket_cap_mb, 25 MB.
// FirstBucketBytes caps the first bucket, so that communication starts early (DDP's 1 MB).
const (
	DefaultBucketBytes = 25 << 20
	FirstBucketBytes   = 1 << 20
)

// Parallel makes Fit train data-parallel, as PyTorch's DistributedDataParallel does: one rank
// per device, each with the model at the per-rank batch (Model.Batch), the global batch being
// Model.Batch × the number of ranks. Every global batch is drawn in the seeded order of a
// single-device run, and rank r takes its rows [r·b, (r+1)·b) (DistributedSampler's
// semantics), so the result does not depend on the number of ranks beyond the order in which
// the gradients add up.
type Parallel struct {
	// Devices run this process's ranks, one each, in rank order (nil: the reference
	// interpreter). The caller opens and closes them.
	Devices []executor.Device
	// Comms returns the communicators of this process's ranks, one per memory (a rank's device,
	// or a HostMemory for the reference interpreter), in the same order; Fit closes them. nil
	// makes them with collective.NewLocal: every rank is in this process.
	Comms func(mems []collective.Memory) ([]collective.Comm, error)
	// BucketBytes caps a bucket of gradients all-reduced together (0: DefaultBucketBytes).
	BucketBytes int64
	// NoOverlap issues every bucket after the backward pass instead of each as soon as the
	// kernels writing its gradients are queued (compiled devices). Both compute the same.
	NoOverlap bool
}

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
	// The optimizer's kernels wait for the last bucket.
	if err := d.beforeCompute(i); err != nil {
		return err
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

// fitParallel is Fit over o.Parallel's ranks.
func fitParallel(m *Model, o FitOptions) (*FitResult, error) {
	p := o.Parallel
	n := len(p.Devices)
	switch {
	case n == 0:
		return nil, fmt.Errorf("train: data-parallel training on no devices")
	case o.Step != nil:
		return nil, fmt.Errorf("train: data-parallel training builds its own step (give FitOptions.Optimizer, not Step)")
	case o.Device != nil:
		return nil, fmt.Errorf("train: give the devices of data-parallel training in Parallel.Devices, not Device")
	case o.Optimizer == nil:
		return nil, fmt.Errorf("train: no optimizer")
	}
	split, err := m.SplitStep(o.Optimizer, Options{AMP: o.AMP, Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	trainSet, flatten, err := m.bind(o.Train)
	if err != nil {
		return nil, err
	}
	var testSet data.Dataset
	testFlatten := false
	if o.Test != nil {
		if testSet, testFlatten, err = m.bind(o.Test); err != nil {
			return nil, err
		}
	}

	d := &ddp{ranks: make([]ddpRank, n), mems: make([]rankMemory, n), names: make([]string, n), stats: make([]executor.Ptr, n), streams: make([]collective.Stream, n), ordered: make([]commStreams, n), issued: make([]int, n)}
	mems := make([]collective.Memory, n)
	for i, dev := range p.Devices {
		if dev == nil {
			d.mems[i] = NewHostMemory()
		} else {
			d.mems[i] = dev
		}
		if s, ok := dev.(commStreams); ok {
			cs, err := s.CommStream()
			if err != nil {
				return nil, fmt.Errorf("train: %s: %w", dev.Name(), err)
			}
			d.streams[i], d.ordered[i] = collective.Stream(cs), s
		}
		mems[i] = d.mems[i]
	}
	if p.Comms != nil {
		d.comms, err = p.Comms(mems)
	} else {
		d.comms, err = collective.NewLocal(mems, collective.Options{})
	}
	if err != nil {
		return nil, fmt.Errorf("train: making the communicators: %w", err)
	}
	defer d.close()
	if len(d.comms) != n {
		return nil, fmt.Errorf("train: %d communicators for %d devices", len(d.comms), n)
	}
	world := d.comms[0].Size()
	lead := -1 // the local rank that is rank 0, if any
	for i, c := range d.comms {
		dev := "ref"
		if p.Devices[i] != nil {
			dev = p.Devices[i].Name()
		}
		d.names[i] = fmt.Sprintf("rank %d (%s)", c.Rank(), dev)
		if c.Size() != world {
			return nil, fmt.Errorf("train: %s is of %d ranks, %s of %d", d.names[i], c.Size(), d.names[0], world)
		}
		if c.Rank() == 0 {
			lead = i
		}
	}
	global := m.Batch * world
	if nrows := o.Train.Len(); nrows < global {
		return nil, fmt.Errorf("%d training %s make no global batch of %d (%d ranks × %d)", nrows, unit(o.Train), global, world, m.Batch)
	}
	limit := p.BucketBytes
	if limit <= 0 {
		limit = DefaultBucketBytes
	}
	d.buckets = makeBuckets(split.Update.Graph, split.Update.Params, limit)

	var params, state map[string]*tensor.Tensor
	first, steps := 1, 0
	if c := o.Resume; c != nil {
		params, state, first, steps = c.Params, c.State, c.Epoch+1, c.Steps
	} else {
		if params, err = InitParams(split.Full.Graph, o.Seed); err != nil {
			return nil, err
		}
		state = split.Full.InitState()
	}
	var arts *splitArtifacts
	if slices.ContainsFunc(p.Devices, func(d executor.Device) bool { return d != nil }) {
		if arts, err = compileSplit(split, m, o.Compiler); err != nil {
			return nil, err
		}
	}
	err = d.each(func(i int) error {
		var err error
		if d.stats[i], err = d.mems[i].Alloc(64); err != nil {
			return err
		}
		st := rankKey(state, d.comms[i].Rank())
		if dev := p.Devices[i]; dev != nil {
			c, err := newCompiledRank(dev, split, m, arts, params, st, !o.NoCUDAGraphs)
			if err != nil {
				return err
			}
			d.ranks[i] = c
			if !p.NoOverlap {
				if err := d.overlap(i, c); err != nil {
					return err
				}
			}
		} else {
			r, err := newRefRank(split, m, d.mems[i].(*HostMemory), params, st)
			if err != nil {
				return err
			}
			d.ranks[i] = r
		}
		return d.broadcast(i)
	})
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}

	res := &FitResult{}
	last := first + o.Epochs - 1
	loader := &data.Loader{Data: trainSet, Batch: global, Shuffle: true, Seed: o.Seed, DropLast: true, Flatten: flatten, NoWorker: o.NoPrefetch}
	if o.OnStart != nil {
		if err := o.OnStart(Start{FirstEpoch: first, LastEpoch: last, Batches: loader.Len()}); err != nil {
			return nil, err
		}
	}
	outs := make([]map[string]*tensor.Tensor, n)
	meters := make([]*meter, n)
	losses := make([]float64, n)
	stopped := false
	for epoch := first; epoch <= last && !stopped; epoch++ {
		start := time.Now()
		var lossSum float64
		done := 0
		for i := range meters {
			meters[i] = &meter{l: m.Loss}
		}
		for b, err := range loader.Epoch(epoch) {
			if err != nil {
				return nil, err
			}
			err := d.each(func(i int) error {
				lo := d.comms[i].Rank() * m.Batch
				x, y := shardRows(b.X, lo, lo+m.Batch), shardRows(b.Y, lo, lo+m.Batch)
				d.issued[i] = 0
				out, err := d.ranks[i].backward(map[string]*tensor.Tensor{m.Input: x, m.Target: y})
				if err != nil {
					return err
				}
				if err := d.allReduceGrads(i); err != nil {
					return err
				}
				upd, err := d.ranks[i].update()
				if err != nil {
					return err
				}
				if f, ok := upd[FoundInfName]; ok {
					out[FoundInfName] = f
				}
				l, err := d.reduce(i, []float64{out[DefaultLoss].F[0]}, collective.Avg)
				if err != nil {
					return fmt.Errorf("averaging the loss: %w", err)
				}
				outs[i], losses[i] = out, l[0]
				meters[i].add(out[m.Output], y, m.Batch)
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("epoch %d, step %d: %w", epoch, b.Index+1, err)
			}
			steps++
			loss := losses[0]
			lossSum += loss * float64(global)
			done += global
			if o.OnStep != nil {
				err := o.OnStep(StepEnd{Epoch: epoch, LastEpoch: last, Index: b.Index, Batches: loader.Len(), Step: steps, Loss: loss, Rows: global, Outputs: outs[0]})
				if errors.Is(err, ErrStop) {
					stopped = true
					break
				}
				if err != nil {
					return nil, err
				}
			}
		}
		e := EpochEnd{Epoch: epoch, LastEpoch: last, Steps: steps, TrainTime: time.Since(start)}
		e.Train.Rows = done
		if done > 0 {
			e.Train.Loss = lossSum / float64(done)
		}
		// The metrics over every rank's rows: the meters' sums, summed over the ranks; the test
		// set's batches shared out among the ranks, whose weights are the same, likewise.
		train, test := &evalTotals{mt: &meter{l: m.Loss}}, &evalTotals{mt: &meter{l: m.Loss}}
		err := d.each(func(i int) error {
			s, err := d.reduceMeter(i, &evalTotals{mt: meters[i]})
			if err != nil {
				return fmt.Errorf("summing the metrics: %w", err)
			}
			if i == 0 {
				train = s
			}
			if testSet == nil {
				return nil
			}
			mine, err := evalSums(d.ranks[i], m, testSet, testFlatten, o.NoPrefetch, d.comms[i].Rank(), world)
			if err != nil {
				return fmt.Errorf("evaluating: %w", err)
			}
			if s, err = d.reduceMeter(i, mine); err != nil {
				return fmt.Errorf("summing the test metrics: %w", err)
			}
			if i == 0 {
				test = s
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("epoch %d: %w", epoch, err)
		}
		train.mt.metrics(&e.Train)
		if testSet != nil {
			e.Test = test.metrics(testSet.Len())
		}
		// Every rank holds the same weights: rank 0 writes the checkpoint.
		from := max(lead, 0)
		params, state, err := d.ranks[from].weights()
		if err != nil {
			return nil, fmt.Errorf("epoch %d: reading the weights: %v", epoch, err)
		}
		res.Params, res.State = params, state
		if o.Save != "" && lead >= 0 {
			meta := map[string]string{MetaEpoch: strconv.Itoa(epoch), MetaSteps: strconv.Itoa(steps), MetaSeed: strconv.FormatUint(o.Seed, 10)}
			if err := split.Full.SaveCheckpoint(o.Save, params, state, meta); err != nil {
				return nil, err
			}
		}
		e.Time = time.Since(start)
		res.Epochs = append(res.Epochs, e)
		if o.OnEpoch != nil {
			if err := o.OnEpoch(e); errors.Is(err, ErrStop) {
				break
			} else if err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// compileSplit compiles a split step's two graphs and the evaluation.
func compileSplit(s *SplitStep, m *Model, copt compiler.Options) (*splitArtifacts, error) {
	a := &splitArtifacts{}
	for _, c := range []struct {
		what string
		g    *ir.Graph
		dst  **artifact.Artifact
	}{{"the gradients' step", s.Grad.Graph, &a.grad}, {"the update step", s.Update.Graph, &a.update}, {"the evaluation", m.Eval, &a.eval}} {
		r, err := compiler.Compile(c.g, copt)
		if err != nil {
			return nil, fmt.Errorf("compiling %s: %v", c.what, err)
		}
		*c.dst = r.Artifact
	}
	return a, nil
}
