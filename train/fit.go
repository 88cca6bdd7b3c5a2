package train

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// Checkpoint metadata Fit writes besides the step's (docs/training.md).
const (
	MetaEpoch = "gcomp.epoch" // epochs completed
	MetaSteps = "gcomp.steps" // train steps run (batches), skipped AMP steps included
	MetaSeed  = "gcomp.seed"  // the initial weights' and the shuffle's seed
)

// ErrStop, returned by a callback of Fit, ends training after that step or epoch without an
// error: early stopping.
var ErrStop = errors.New("train: stop")

// FitOptions say how Fit trains. Train, Epochs and a step (Step, or Optimizer) are required.
type FitOptions struct {
	// Step is the train step of the model (Model.Step); when nil, Fit builds it with Optimizer,
	// AMP and Schedule (data-parallel training always builds its own).
	Step      *StepGraph
	Optimizer Optimizer
	AMP       string
	// Schedule varies the learning rate of the step Fit builds with the step count, which is
	// the global step count in data-parallel training: every rank updates with the same rate.
	// A Step carries its own schedule (Options.Schedule).
	Schedule *Schedule
	// Device runs the compiled step; nil trains on the reference interpreter. The caller opens
	// and closes it. Compiler are the options the step and the evaluation are compiled with.
	Device   executor.Device
	Compiler compiler.Options
	// Parallel, when set, trains data-parallel over several devices (and processes) instead of
	// on Device: see Parallel.
	Parallel *Parallel

	Train data.Dataset // shuffled every epoch, the last partial batch dropped
	Test  data.Dataset // evaluated after every epoch, in eval mode; nil for none
	// Epochs is the number of epochs to train (after the checkpoint's, with Resume).
	Epochs int
	// Seed draws the initial weights (without Resume) and the shuffle of every epoch.
	Seed uint64
	// Resume continues from a checkpoint (StepGraph.Resume): its weights, state, epoch and steps.
	Resume *Checkpoint
	// Save, when set, is the checkpoint written after every epoch (SaveCheckpoint with the
	// MetaEpoch, MetaSteps and MetaSeed metadata).
	Save string
	// NoPrefetch prepares each batch when it is needed instead of in a goroutine (and, on a
	// GPU, copies it then instead of during the previous step); NoCUDAGraphs launches a step's
	// kernels one by one instead of replaying a CUDA graph. Neither changes what is computed.
	NoPrefetch, NoCUDAGraphs bool

	// OnStep, when set, is called after every train step; OnEpoch after every epoch's evaluation
	// and checkpoint. ErrStop from either ends Fit without an error; another error ends it with
	// that error.
	OnStep  func(StepEnd) error
	OnEpoch func(EpochEnd) error
	// OnStart, when set, is called once the data is checked and the step compiled and loaded,
	// before the first step; an error ends Fit with that error.
	OnStart func(Start) error
}

// Start is what OnStart sees.
type Start struct {
	FirstEpoch, LastEpoch int
	Batches               int // steps per epoch
}

// StepEnd is what OnStep sees.
type StepEnd struct {
	Epoch     int // the epoch, from 1
	LastEpoch int
	Index     int     // the batch's number in the epoch, from 0
	Batches   int     // batches per epoch
	Step      int     // train steps run so far, this one included (a resumed run counts on)
	Loss      float64 // the batch's mean loss
	Rows      int     // rows in the batch
	Outputs   map[string]*tensor.Tensor
}

// EpochEnd is what OnEpoch sees.
type EpochEnd struct {
	Epoch, LastEpoch int
	Steps            int     // train steps run so far
	Train            Metrics // over the epoch's steps, with the weights of each step
	Test             *Metrics
	TrainTime        time.Duration // the steps
	Time             time.Duration // the steps, the evaluation and the checkpoint
}

// FitResult is what Fit returns.
type FitResult struct {
	Epochs        []EpochEnd
	Params, State map[string]*tensor.Tensor // the final weights and optimizer state
}

// Checkpoint is a checkpoint to resume from.
type Checkpoint struct {
	Params, State map[string]*tensor.Tensor
	Epoch, Steps  int    // epochs completed, steps run
	Seed          uint64 // the run's seed
}

// Resume reads a checkpoint Fit wrote for this step.
func (s *StepGraph) Resume(path string) (*Checkpoint, error) {
	params, state, meta, err := s.LoadCheckpoint(path)
	if err != nil {
		return nil, err
	}
	e, err1 := strconv.Atoi(meta[MetaEpoch])
	st, err2 := strconv.Atoi(meta[MetaSteps])
	sd, err3 := strconv.ParseUint(meta[MetaSeed], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || e < 0 || st < 0 {
		return nil, fmt.Errorf("%s: not a gcomp train checkpoint (metadata %s, %s and %s missing or invalid)", path, MetaEpoch, MetaSteps, MetaSeed)
	}
	return &Checkpoint{Params: params, State: state, Epoch: e, Steps: st, Seed: sd}, nil
}

// Fit trains m: every epoch runs a train step on each batch of o.Train (shuffled, in batches of
// m.Batch, the last partial batch dropped, or run at its size when the model's batch is symbolic;
// the next batch prepared while a step runs), then
// evaluates o.Test in eval mode and writes the checkpoint. It is `gcomp train` without the
// printing, and trains the same weights bit for bit.
func Fit(m *Model, o FitOptions) (*FitResult, error) {
	if o.Epochs < 1 {
		return nil, fmt.Errorf("train: %d epochs: want at least 1", o.Epochs)
	}
	if o.Train == nil {
		return nil, fmt.Errorf("train: no training data")
	}
	if o.Step != nil && o.Schedule != nil {
		return nil, fmt.Errorf("train: give the schedule in the step's Options, not in FitOptions, with a Step")
	}
	if o.Parallel != nil {
		return fitParallel(m, o)
	}
	step := o.Step
	if step == nil {
		if o.Optimizer == nil {
			return nil, fmt.Errorf("train: no optimizer")
		}
		var err error
		if step, err = m.Step(o.Optimizer, Options{AMP: o.AMP, Seed: o.Seed, Schedule: o.Schedule}); err != nil {
			return nil, err
		}
	}
	trainSet, flatten, err := m.bind(o.Train)
	if err != nil {
		return nil, err
	}
	if n := o.Train.Len(); n < m.Batch && len(step.Graph.Dims) == 0 || n == 0 {
		return nil, fmt.Errorf("%d training %s make no batch of %d", n, unit(o.Train), m.Batch)
	}
	var testSet data.Dataset
	testFlatten := false
	if o.Test != nil {
		if testSet, testFlatten, err = m.bind(o.Test); err != nil {
			return nil, err
		}
	}

	var params, state map[string]*tensor.Tensor
	first, steps := 1, 0
	if c := o.Resume; c != nil {
		params, state, first, steps = c.Params, c.State, c.Epoch+1, c.Steps
	} else {
		if params, err = InitParams(step.Graph, o.Seed); err != nil {
			return nil, err
		}
		state = step.InitState()
	}
	whole := len(step.Graph.Dims) == 0 // symloss.go: a symbolic step runs the last partial batch
	if err := step.Schedule.checkRun(steps + o.Epochs*StepsPerEpoch(o.Train.Len(), m.Batch, !whole)); err != nil {
		return nil, err
	}
	tr, err := newTrainer(o.Device, o.Compiler, step, m, params, state, !o.NoPrefetch, !o.NoCUDAGraphs)
	if err != nil {
		return nil, err
	}
	defer tr.close()

	res := &FitResult{}
	last := first + o.Epochs - 1
	loader := &data.Loader{Data: trainSet, Batch: m.Batch, Shuffle: true, Seed: o.Seed, DropLast: whole, Flatten: flatten,
		NoWorker: o.NoPrefetch, Prepare: tr.prepare}
	if o.OnStart != nil {
		if err := o.OnStart(Start{FirstEpoch: first, LastEpoch: last, Batches: loader.Len()}); err != nil {
			return nil, err
		}
	}
	stopped := false
	for epoch := first; epoch <= last && !stopped; epoch++ {
		start := time.Now()
		var lossSum float64 // Σ loss·rows, the order internal/progress's running mean sums in
		done := 0
		mt := &meter{l: m.Loss}
		_, err := runEpoch(tr, loader, epoch, func(b *data.Batch, out map[string]*tensor.Tensor) error {
			steps++
			loss := out[DefaultLoss].F[0]
			rows := len(b.Indices) // m.Batch, or fewer in a symbolic step's last batch
			mt.add(out[m.Output], b.Y, rows)
			lossSum += loss * float64(rows)
			done += rows
			if o.OnStep != nil {
				err := o.OnStep(StepEnd{Epoch: epoch, LastEpoch: last, Index: b.Index, Batches: loader.Len(), Step: steps, Loss: loss, Rows: rows, Outputs: out})
				if errors.Is(err, ErrStop) {
					stopped = true
				}
				return err
			}
			return nil
		})
		if err != nil && !errors.Is(err, ErrStop) {
			return nil, err
		}
		e := EpochEnd{Epoch: epoch, LastEpoch: last, Steps: steps, TrainTime: time.Since(start)}
		e.Train.Rows = done
		if done > 0 {
			e.Train.Loss = lossSum / float64(done)
		}
		mt.metrics(&e.Train)
		if testSet != nil {
			t, err := evaluate(tr, m, testSet, testFlatten, o.NoPrefetch)
			if err != nil {
				return nil, fmt.Errorf("epoch %d: evaluating: %v", epoch, err)
			}
			e.Test = t
		}
		params, state, err := tr.weights()
		if err != nil {
			return nil, fmt.Errorf("epoch %d: reading the weights: %v", epoch, err)
		}
		res.Params, res.State = params, state
		if o.Save != "" {
			meta := map[string]string{MetaEpoch: strconv.Itoa(epoch), MetaSteps: strconv.Itoa(steps), MetaSeed: strconv.FormatUint(o.Seed, 10)}
			if err := step.SaveCheckpoint(o.Save, params, state, meta); err != nil {
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

// unit is what d's rows are called in messages.
func unit(d data.Dataset) string {
	if _, ok := d.(*data.Images); ok {
		return "images"
	}
	return "rows"
}

// evaluate returns the metrics of the model with the trainer's weights over d. The last batch,
// when smaller, is padded with zero rows whose results are ignored (the rows of a model's
// inference are independent). The mean loss divides the sum of the per-sample losses by the
// samples' total weight as the loss's mean reduction does (the row count, the element count for
// an elementwise loss, Σ w[yᵢ] for class weights).
func evaluate(tr evaluator, m *Model, d data.Dataset, flatten, noWorker bool) (*Metrics, error) {
	s, err := evalSums(tr, m, d, flatten, noWorker, 0, 1)
	if err != nil {
		return nil, err
	}
	return s.metrics(d.Len()), nil
}

// evalTotals are the sums an evaluation's metrics divide: of the per-sample losses, of their
// weights, and the meter's.
type evalTotals struct {
	loss, weight float64
	mt           *meter
}

func (s *evalTotals) metrics(rows int) *Metrics {
	r := &Metrics{Loss: s.loss / s.weight, Rows: rows}
	s.mt.metrics(r)
	return r
}

// evalSums evaluates the batches of d whose index is part modulo parts (one rank's share).
func evalSums(tr evaluator, m *Model, d data.Dataset, flatten, noWorker bool, part, parts int) (*evalTotals, error) {
	loader := &data.Loader{Data: d, Batch: m.Batch, Flatten: flatten, NoWorker: noWorker}
	mt := &meter{l: m.Loss}
	var loss, weight float64
	for b, err := range loader.Epoch(0) {
		if err != nil {
			return nil, err
		}
		if b.Index%parts != part {
			continue
		}
		n := len(b.Indices)
		out, err := tr.runEval(map[string]*tensor.Tensor{m.Input: padRows(b.X, m.Batch), m.Target: padRows(b.Y, m.Batch)})
		if err != nil {
			return nil, err
		}
		l := out[DefaultLoss]
		per := l.Len() / m.Batch
		for _, v := range l.F[:n*per] {
			loss += v
		}
		weight += m.Loss.weight(b.Y, n, per)
		mt.add(out[m.Output], b.Y, n)
	}
	return &evalTotals{loss: loss, weight: weight, mt: mt}, nil
}

// labelDivisor reports whether the mean reduction divides by a sum over the labels (Σ w[yᵢ]
// over those not ignored) rather than by the element count.
func (l Loss) labelDivisor() bool { return l.Class() && (l.Weight != nil || l.IgnoreIndex != nil) }

// weight is the divisor of the mean reduction over the first n rows of targets, each with per
// losses.
func (l Loss) weight(targets *tensor.Tensor, n, per int) float64 {
	if !l.labelDivisor() {
		return float64(n * per)
	}
	var w float64
	for _, y := range targets.I[:n] {
		switch {
		case l.IgnoreIndex != nil && y == *l.IgnoreIndex:
		case l.Weight != nil:
			w += l.Weight[y]
		default:
			w++
		}
	}
	return w
}
