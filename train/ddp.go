package train

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	split, err := m.SplitStep(o.Optimizer, Options{AMP: o.AMP, Seed: o.Seed, Schedule: o.Schedule})
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
		// A simulated GPU's collectives go on its streams (collective.StreamMemory).
		mems[i] = collective.MemoryOf(d.mems[i])
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
	d.symbolic = len(split.Grad.Graph.Dims) > 0 // ddp_sym.go: the last partial batch runs too
	d.weighted = split.Grad.Graph.Lookup(GradWeightName) != nil
	if nrows := o.Train.Len(); nrows < global && !d.symbolic || nrows == 0 {
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
	if err := split.Full.Schedule.checkRun(steps + o.Epochs*StepsPerEpoch(o.Train.Len(), global, d.symbolic)); err != nil {
		return nil, err
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
	loader := &data.Loader{Data: trainSet, Batch: global, Shuffle: true, Seed: o.Seed, DropLast: !d.symbolic, Flatten: flatten, NoWorker: o.NoPrefetch}
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
				var err error
				outs[i], losses[i], err = d.step(i, m, b, meters[i])
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("epoch %d, step %d: %w", epoch, b.Index+1, err)
			}
			steps++
			loss, rows := losses[0], len(b.Indices) // global, or fewer in a symbolic step's last batch
			lossSum += loss * float64(rows)
			done += rows
			if o.OnStep != nil {
				err := o.OnStep(StepEnd{Epoch: epoch, LastEpoch: last, Index: b.Index, Batches: loader.Len(), Step: steps, Loss: loss, Rows: rows, Outputs: outs[0]})
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
		if err := d.epochMetrics(m, meters, testSet, testFlatten, o.NoPrefetch, &e); err != nil {
			return nil, fmt.Errorf("epoch %d: %w", epoch, err)
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

// step runs a train step on rank i: its shard of the global batch b through backward, the
// gradients averaged, the update; then the loss averaged over the ranks, and meter measuring
// the shard's predictions.
func (d *ddp) step(i int, m *Model, b *data.Batch, mt *meter) (map[string]*tensor.Tensor, float64, error) {
	sh := shardOf(m.Loss, b.Y, len(b.Indices), d.comms[i].Rank(), d.comms[i].Size(), d.symbolic, d.weighted) // ddp_sym.go
	x, y := shardRows(b.X, sh.lo, sh.hi), shardRows(b.Y, sh.lo, sh.hi)
	d.issued[i] = 0
	in := map[string]*tensor.Tensor{m.Input: x, m.Target: y}
	if d.weighted {
		in[GradWeightName] = tensor.FromFloats(ir.T(ir.F32), []float64{sh.weight})
	}
	if err := d.ranks[i].backward(in); err != nil {
		return nil, 0, err
	}
	if err := d.allReduceGrads(i); err != nil {
		return nil, 0, err
	}
	upd, err := d.ranks[i].update()
	if err != nil {
		return nil, 0, err
	}
	out, err := d.ranks[i].outputs()
	if err != nil {
		return nil, 0, err
	}
	if f, ok := upd[FoundInfName]; ok {
		out[FoundInfName] = f
	}
	loss := out[DefaultLoss].F[0]
	if d.weighted {
		loss *= sh.weight
		if sh.weight == 0 {
			loss = 0 // a padding row, or a static shard of ignored labels (whose loss is 0/0)
		}
	}
	l, err := d.reduce(i, []float64{loss}, collective.Avg)
	if err != nil {
		return nil, 0, fmt.Errorf("averaging the loss: %w", err)
	}
	mt.add(out[m.Output], y, sh.rows)
	return out, l[0], nil
}

// epochMetrics fills e's metrics over every rank's rows: the meters' sums, summed over the
// ranks; and the test set's, its batches shared out among the ranks (whose weights are the same)
// and their sums likewise.
func (d *ddp) epochMetrics(m *Model, meters []*meter, test data.Dataset, flatten, noWorker bool, e *EpochEnd) error {
	var train, tested *evalTotals
	err := d.each(func(i int) error {
		s, err := d.reduceMeter(i, &evalTotals{mt: meters[i]})
		if err != nil {
			return fmt.Errorf("summing the metrics: %w", err)
		}
		if i == 0 {
			train = s
		}
		if test == nil {
			return nil
		}
		mine, err := evalSums(d.ranks[i], m, test, flatten, noWorker, d.comms[i].Rank(), d.comms[i].Size())
		if err != nil {
			return fmt.Errorf("evaluating: %w", err)
		}
		if s, err = d.reduceMeter(i, mine); err != nil {
			return fmt.Errorf("summing the test metrics: %w", err)
		}
		if i == 0 {
			tested = s
		}
		return nil
	})
	if err != nil {
		return err
	}
	train.mt.metrics(&e.Train)
	if test != nil {
		e.Test = tested.metrics(test.Len())
	}
	return nil
}

// compileSplit compiles a split step's two graphs (as steps: StepCompilerOptions) and the
// evaluation.
func compileSplit(s *SplitStep, m *Model, copt compiler.Options) (*splitArtifacts, error) {
	a := &splitArtifacts{}
	step := StepCompilerOptions(copt)
	for _, c := range []struct {
		what string
		g    *ir.Graph
		opt  compiler.Options
		dst  **artifact.Artifact
	}{{"the gradients' step", s.Grad.Graph, step, &a.grad}, {"the update step", s.Update.Graph, step, &a.update}, {"the evaluation", m.Eval, copt, &a.eval}} {
		r, err := compiler.Compile(c.g, c.opt)
		if err != nil {
			return nil, fmt.Errorf("compiling %s: %v", c.what, err)
		}
		*c.dst = r.Artifact
	}
	return a, nil
}
