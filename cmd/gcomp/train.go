package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/progress"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/device"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/train"
)

// Checkpoint metadata written by gcomp train besides train's (docs/training.md).
const (
	metaEpoch = "gcomp.epoch" // epochs completed
	metaSteps = "gcomp.steps" // train steps run (batches), skipped AMP steps included
	metaSeed  = "gcomp.seed"  // the initial weights' and the shuffle's seed
)

// logEvery is the number of steps a step record of the metrics log averages over.
const logEvery = 100

// cmdTrain trains a classifier on Fashion-MNIST: the model outputs logits, gcomp adds the
// cross-entropy loss, and every epoch ends with an evaluation on the test set, a checkpoint and
// a summary line.
func cmdTrain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	mf := addModelFlags(fs)
	dataSpec := fs.String("data", "fashion-mnist", "the dataset: fashion-mnist (installed by apt-get install dataset-fashion-mnist), fashion-mnist:DIR, or mnist:DIR (the four IDX files of MNIST's layout, any number of images)")
	epochs := fs.Int("epochs", 1, "epochs to train (after the checkpoint's, with --resume)")
	batch := fs.Int("batch", 0, "images per step; a model's batch is static, so this must be its input's first dimension (default)")
	optName := fs.String("optimizer", "adam", "sgd, adam or adamw, with PyTorch's defaults")
	lr := fs.Float64("lr", 0, "learning rate (default: 1e-3 for adam and adamw; sgd needs one)")
	momentum := fs.Float64("momentum", 0, "sgd: momentum")
	wd := fs.Float64("weight-decay", 0, "weight decay (default: 0, adamw 1e-2)")
	amp := fs.String("amp", "", "mixed precision: bf16 or f16 (with dynamic loss scaling)")
	devName := fs.String("device", "auto", "where to train: "+device.Names)
	seed := fs.Uint64("seed", 0, "seed of the initial weights and of the shuffle (default: 0, or the checkpoint's with --resume)")
	save := fs.String("save", "", "checkpoint written after every epoch (safetensors: parameters, optimizer state; required)")
	resume := fs.String("resume", "", "continue training from this checkpoint")
	logPath := fs.String("log", "", "metrics log, JSON lines (appended to with --resume)")
	limit := fs.Int("limit", 0, "use only the first N training images and at most N test images (quick runs)")
	graphs := fs.Bool("cuda-graphs", true, "on a GPU, record a train step's kernels once as a CUDA graph and replay it every step (one launch instead of one per kernel); --cuda-graphs=false launches kernel by kernel")
	prefetch := fs.Bool("prefetch", true, "prepare the next batch in a goroutine (and on a GPU copy it to the device) while the current step runs; --prefetch=false does each in turn")
	var stats statsFlag
	fs.Var(&stats, "stats", "compile the train step and print its cost report (kernels, DRAM bytes, arena, modeled H100 time) instead of training: --stats for a table, --stats=json for JSON")
	path, err := parseModelArgs(fs, args, stdout, "MODEL --data fashion-mnist[:DIR] --epochs N [--batch B] --optimizer sgd|adam|adamw [--lr X] [--momentum M] [--weight-decay W] [--amp bf16|f16] --device auto|cuda:N|sim|ref [--seed S] --save W.safetensors [--resume W.safetensors] [--log metrics.jsonl] [--limit N] [--prefetch=false] [--cuda-graphs=false] [--stats[=json]]")
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	fail := func(format string, a ...any) error {
		// Package train's errors say "train: ", which this prefix says already.
		return errors.New(strings.ReplaceAll(fmt.Sprintf("gcomp train: "+format, a...), ": train: ", ": "))
	}

	load := data.FashionMNISTLimit
	switch name, dir, hasDir := strings.Cut(*dataSpec, ":"); {
	case name == "fashion-mnist" && (!hasDir || dir != ""):
	case name == "mnist" && dir != "":
		load = data.LoadMNISTLimit
	default:
		return fail("unknown --data %q (want fashion-mnist, fashion-mnist:DIR or mnist:DIR)", *dataSpec)
	}
	_, dataDir, _ := strings.Cut(*dataSpec, ":")
	switch {
	case *epochs < 1:
		return fail("--epochs %d: want at least 1", *epochs)
	case *batch < 0:
		return fail("--batch %d: want at least 1", *batch)
	case *limit < 0:
		return fail("--limit %d: want at least 1 (or 0 for all)", *limit)
	case *save == "" && stats == "":
		return fail("--save FILE.safetensors is required")
	case set["lr"] && !(*lr > 0 && *lr <= math.MaxFloat64):
		return fail("invalid learning rate %v (--lr): want a positive number", *lr)
	case set["momentum"] && *optName != "sgd":
		return fail("--momentum is for sgd; %s has betas", *optName)
	}
	if _, err := device.Parse(*devName); err != nil {
		return fail("%v", err)
	}
	for _, p := range []string{*save, *logPath} {
		if p != "" {
			if err := checkOutput(p); err != nil {
				return err
			}
		}
	}
	opt, err := train.ParseOptimizer(*optName, *lr)
	if err == nil {
		switch o := opt.(type) {
		case *train.SGD:
			o.Momentum, o.WeightDecay = *momentum, *wd
		case *train.Adam:
			if set["weight-decay"] {
				o.WeightDecay = *wd
			}
		}
		err = opt.Check()
	}
	if err != nil {
		return fail("%v", err)
	}

	fwd, err := mf.load(path)
	if err != nil {
		return err
	}
	// The step runs the model in training mode (dropout drops, BatchNorm uses and updates batch
	// statistics); test accuracy is measured in eval mode, as model.train()/model.eval().
	fwdTrain, err := mf.loadTraining(path)
	if err != nil {
		return err
	}
	m, err := classifier(fwd, fwdTrain, *batch)
	if err != nil {
		return fail("%s: %v", path, err)
	}
	step, err := train.StepFromGraph(m.train, opt, train.Options{AMP: *amp, Seed: *seed})
	if err != nil {
		return fail("%s: %v", path, err)
	}
	if stats != "" {
		// The whole step (forward, backward, update) as the devices run it.
		res, err := compiler.Compile(step.Graph, compiler.Options{})
		if err != nil {
			return fail("%s: %v", path, err)
		}
		if stats == "json" {
			stdout.Write(res.Passes.Stats.JSON())
		} else {
			fmt.Fprintf(stdout, "train step of %s, %s, batch %d:\n", path, describeOptimizer(opt, *amp), m.batch)
			res.Passes.Stats.WriteTable(stdout)
		}
		return nil
	}
	// Only the images --limit keeps are held in memory, whatever the files' headers claim.
	trainSet, testSet, err := load(dataDir, *limit)
	if err != nil {
		return fail("%v", err)
	}
	if trainSet, testSet, err = m.fit(trainSet, testSet, *limit); err != nil {
		return fail("%s: %v", path, err)
	}

	var params, state map[string]*tensor.Tensor
	first, steps := 1, 0
	if *resume != "" {
		var meta map[string]string
		if params, state, meta, err = step.LoadCheckpoint(*resume); err != nil {
			return fail("%v", err)
		}
		e, err1 := strconv.Atoi(meta[metaEpoch])
		s, err2 := strconv.Atoi(meta[metaSteps])
		sd, err3 := strconv.ParseUint(meta[metaSeed], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || e < 0 || s < 0 {
			return fail("%s: not a gcomp train checkpoint (metadata %s, %s and %s missing or invalid)", *resume, metaEpoch, metaSteps, metaSeed)
		}
		first, steps = e+1, s
		if !set["seed"] {
			*seed = sd
		}
	} else {
		if params, err = train.InitParams(step.Graph, *seed); err != nil {
			return fail("%v", err)
		}
		state = step.InitState()
	}

	sel, err := device.Open(*devName, device.Options{Driver: testDriver, Sim: func() (executor.Device, error) {
		// Training runs many steps: bounds are enforced, the race and barrier checks are left to tests.
		return simdev.New(simdev.Options{NoCheck: true}), nil
	}})
	if err != nil {
		return fail("%v", err)
	}
	if sel.Fallback != "" {
		fmt.Fprintf(stderr, "gcomp train: no usable GPU (%s): training on the PTX simulator\n", sel.Fallback)
	}
	tr, err := newTrainer(sel, step, m, params, state, *prefetch)
	if err != nil {
		return fail("%s on %s: %v", path, sel.Spec, err)
	}
	if ct, ok := tr.(*compiledTrainer); ok {
		ct.prog.UseGraphs(*graphs) // devices without graphs (the simulator) launch kernel by kernel
	}
	defer tr.close()

	var log *os.File
	if *logPath != "" {
		mode := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if *resume != "" {
			// Records past the checkpoint (of an interrupted epoch) are dropped, not repeated.
			if err := truncateLog(*logPath, first-1, steps); err != nil {
				return fail("%v", err)
			}
			mode = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		if log, err = os.OpenFile(*logPath, mode, 0o644); err != nil {
			return fail("%v", err)
		}
		defer log.Close()
	}
	writeRecord := func(r metricRecord) error {
		if log == nil {
			return nil
		}
		line, _ := json.Marshal(r)
		_, err := log.Write(append(line, '\n'))
		return err
	}

	last := first + *epochs - 1
	loader := &data.Loader{Data: trainSet, Batch: m.batch, Shuffle: true, Seed: *seed, DropLast: true, Flatten: m.flatten,
		NoWorker: !*prefetch, Prepare: tr.prepare}
	fmt.Fprintf(stderr, "gcomp train: %s on %s: %d training images, %d steps of %d per epoch, %s\n",
		path, sel.Spec, trainSet.N, loader.Len(), m.batch, describeOptimizer(opt, *amp))
	for epoch := first; epoch <= last; epoch++ {
		start := time.Now()
		bar := progress.New(stderr, fmt.Sprintf("epoch %d/%d", epoch, last), "images", loader.Len()*m.batch)
		var correct, logSteps int
		var logLoss float64
		logStart := start
		_, err := runEpoch(tr, loader, epoch, func(b *data.Batch, out map[string]*tensor.Tensor) error {
			steps++
			loss := out[train.DefaultLoss].F[0]
			correct += countCorrect(out[train.LogitsName], b.Y, m.batch)
			bar.Add(m.batch, loss)
			logLoss += loss
			logSteps++
			if steps%logEvery == 0 || b.Index == loader.Len()-1 {
				now := time.Now()
				rate := float64(logSteps*m.batch) / now.Sub(logStart).Seconds()
				if err := writeRecord(metricRecord{Epoch: epoch, Step: steps, TrainLoss: num(logLoss / float64(logSteps)), ImagesPerSec: pnum(rate)}); err != nil {
					return fmt.Errorf("%s: %v", *logPath, err)
				}
				logLoss, logSteps, logStart = 0, 0, now
			}
			return nil
		})
		if err != nil {
			return fail("%v", err)
		}
		bar.Finish()
		trainTime := time.Since(start)
		trainLoss, trainAcc := bar.Loss(), float64(correct)/float64(loader.Len()*m.batch)
		testLoss, testAcc, err := evaluate(tr, testSet, m, !*prefetch)
		if err != nil {
			return fail("epoch %d: evaluating: %v", epoch, err)
		}
		params, state, err := tr.weights()
		if err != nil {
			return fail("epoch %d: reading the weights: %v", epoch, err)
		}
		meta := map[string]string{metaEpoch: strconv.Itoa(epoch), metaSteps: strconv.Itoa(steps), metaSeed: strconv.FormatUint(*seed, 10)}
		if err := step.SaveCheckpoint(*save, params, state, meta); err != nil {
			return fail("%v", err)
		}
		seconds := time.Since(start).Seconds()
		rate := float64(loader.Len()*m.batch) / trainTime.Seconds()
		fmt.Fprintf(stdout, "epoch %d/%d: train loss %.4f, train accuracy %.2f%%, test loss %.4f, test accuracy %.2f%% (%.1f s, %.0f images/s)\n",
			epoch, last, trainLoss, 100*trainAcc, testLoss, 100*testAcc, seconds, rate)
		if err := writeRecord(metricRecord{Epoch: epoch, TrainLoss: num(trainLoss), TrainAccuracy: pnum(trainAcc),
			TestLoss: pnum(testLoss), TestAccuracy: pnum(testAcc), ImagesPerSec: pnum(rate), Seconds: pnum(seconds)}); err != nil {
			return fail("%s: %v", *logPath, err)
		}
	}
	return nil
}

func describeOptimizer(opt train.Optimizer, amp string) string {
	s := opt.Name() + " " + strings.TrimPrefix(fmt.Sprintf("%+v", opt), "&")
	if amp != "" {
		s += ", AMP " + amp
	}
	return s
}

// model is a classifier prepared for training on a dataset.
type model struct {
	train, eval *ir.Graph // the model with the mean and the per-sample cross-entropy loss
	input       string    // the images input
	batch       int
	flatten     bool // the input is [B,H·W], not [B,1,H,W]
	classes     int
}

// classifier checks that fwd is a classifier gcomp train can train (one f32 input of images,
// [B,1,H,W] or [B,H·W], and an output logits [B,C]) and adds the loss: to fwdTrain, the same
// model built in training mode (it may add the random key input), for the step, and to fwd for
// the evaluation.
func classifier(fwd, fwdTrain *ir.Graph, batch int) (*model, error) {
	for _, v := range fwdTrain.Inputs() {
		if u := fwd.Lookup(v.Name); v.Name != frontend.RandomKeyName && (u == nil || !u.Type.Equal(v.Type)) {
			return nil, fmt.Errorf("in training mode the model declares input %s %s, which it does not in eval mode", v.Name, v.Type)
		}
	}
	in := fwd.Inputs()
	if len(in) != 1 || in[0].Type.DType != ir.F32 || (in[0].Type.Shape.Rank() != 4 && in[0].Type.Shape.Rank() != 2) {
		return nil, fmt.Errorf("want one input of images, f32[B,1,H,W] or f32[B,H*W]; the model has %s", describeValues(in))
	}
	x := in[0]
	m := &model{input: x.Name, batch: x.Type.Shape[0], flatten: x.Type.Shape.Rank() == 2}
	if batch != 0 && batch != m.batch {
		return nil, fmt.Errorf("--batch %d: the model's batch is %d (input %s %s); shapes are static, so change the batch in the model", batch, m.batch, x.Name, x.Type)
	}
	var err error
	if m.train, err = train.WithCrossEntropy(fwdTrain, frontend.ReductionMean); err != nil {
		return nil, err
	}
	if m.eval, err = train.WithCrossEntropy(fwd, frontend.ReductionNone); err != nil {
		return nil, err
	}
	for _, o := range fwd.Outputs {
		if o.Name == train.LogitsName {
			if o.Value.Type.Shape[0] != m.batch {
				return nil, fmt.Errorf("output %s is %s, want one row of class scores per image of the batch (%d)", o.Name, o.Value.Type, m.batch)
			}
			m.classes = o.Value.Type.Shape[1]
		}
	}
	return m, nil
}

// fit checks the datasets against the model's input and classes and applies limit.
func (m *model) fit(trainSet, testSet *data.Dataset, limit int) (*data.Dataset, *data.Dataset, error) {
	if limit > 0 {
		var err error
		if trainSet, err = trainSet.Slice(0, min(limit, trainSet.N)); err != nil {
			return nil, nil, err
		}
		if testSet, err = testSet.Slice(0, min(limit, testSet.N)); err != nil {
			return nil, nil, err
		}
	}
	h, w := trainSet.Height(), trainSet.Width()
	want := ir.T(ir.F32, m.batch, 1, h, w)
	if m.flatten {
		want = ir.T(ir.F32, m.batch, h*w)
	}
	x := m.train.Lookup(m.input)
	if !x.Type.Equal(want) {
		return nil, nil, fmt.Errorf("input %s is %s; the images are %dx%d, so want %s", m.input, x.Type, h, w, want)
	}
	if trainSet.N < m.batch {
		return nil, nil, fmt.Errorf("%d training images make no batch of %d", trainSet.N, m.batch)
	}
	for _, d := range []*data.Dataset{trainSet, testSet} {
		for i, l := range d.Labels.I {
			if l >= int64(m.classes) {
				return nil, nil, fmt.Errorf("%s: label %d is %d, the model's logits have %d classes", d.Name, i, l, m.classes)
			}
		}
	}
	return trainSet, testSet, nil
}

func describeValues(vs []*ir.Value) string {
	if len(vs) == 0 {
		return "no inputs"
	}
	var s []string
	for _, v := range vs {
		s = append(s, v.Name+" "+v.Type.String())
	}
	return strings.Join(s, ", ")
}

// runEpoch runs a train step on every batch of the epoch, in order, each overlapped with the next
// batch: the loader's goroutine gathers (and tr.prepare packs) batch i+1 while step i runs, and
// its upload is queued after step i is launched and before step i is waited for. done sees each
// step's batch and outputs. It returns how long the loop waited for the loader's batches: the
// loader's time that the steps did not hide.
func runEpoch(tr trainer, loader *data.Loader, epoch int, done func(*data.Batch, map[string]*tensor.Tensor) error) (time.Duration, error) {
	next, stop := iter.Pull2(loader.Epoch(epoch))
	defer stop()
	var waited time.Duration
	pull := func() (*data.Batch, error, bool) {
		start := time.Now()
		b, err, ok := next()
		waited += time.Since(start)
		return b, err, ok
	}
	b, berr, ok := pull()
	if ok && berr == nil {
		berr = tr.upload(b)
	}
	for ok {
		if berr != nil {
			return waited, berr
		}
		if err := tr.launch(b); err != nil {
			return waited, fmt.Errorf("epoch %d, step %d: %v", epoch, b.Index+1, err)
		}
		nb, nerr, nok := pull()
		if nok && nerr == nil {
			if err := tr.upload(nb); err != nil {
				nerr = fmt.Errorf("epoch %d, step %d: %v", epoch, nb.Index+1, err)
			}
		}
		out, err := tr.wait()
		if err != nil {
			return waited, fmt.Errorf("epoch %d, step %d: %v", epoch, b.Index+1, err)
		}
		if err := done(b, out); err != nil {
			return waited, err
		}
		b, berr, ok = nb, nerr, nok
	}
	return waited, nil
}

// trainer runs train steps and evaluations on one device, keeping the weights and the optimizer
// state there. A step goes prepare (in the loader's goroutine), upload, launch, wait.
type trainer interface {
	// prepare readies a batch in the data loader's goroutine: the compiled trainer, prefetching,
	// packs its inputs into pinned host memory.
	prepare(b *data.Batch) error
	// upload queues b's inputs for the next launch: the compiled trainer, prefetching, copies
	// them on the device's copy stream while the launched step computes.
	upload(b *data.Batch) error
	// launch starts a train step on b.
	launch(b *data.Batch) error
	// wait finishes the launched step and returns the outputs that reach the host (loss, logits).
	wait() (map[string]*tensor.Tensor, error)
	// runEval runs the evaluation graph with the current weights.
	runEval(in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error)
	// weights returns every parameter and the optimizer state.
	weights() (params, state map[string]*tensor.Tensor, err error)
	close()
}

func newTrainer(sel *device.Selected, step *train.StepGraph, m *model, params, state map[string]*tensor.Tensor, prefetch bool) (trainer, error) {
	if sel.Device == nil {
		t := train.NewRefTrainer(step, params)
		for k, v := range state {
			t.State[k] = v.Clone()
		}
		return &refTrainer{t: t, eval: m.eval, input: m.input}, nil
	}
	c := &compiledTrainer{dev: sel.Device, step: step, input: m.input, prefetch: prefetch}
	err := c.load(m.eval, params, state)
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// stepInputs are a train step's inputs from a batch.
func stepInputs(input string, b *data.Batch) map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{input: b.X, train.LabelsName: b.Y}
}

// refTrainer trains on the reference interpreter: a launch runs the step.
type refTrainer struct {
	t     *train.RefTrainer
	eval  *ir.Graph
	input string
	out   map[string]*tensor.Tensor
	err   error
}

func (r *refTrainer) prepare(*data.Batch) error { return nil }
func (r *refTrainer) upload(*data.Batch) error  { return nil }

func (r *refTrainer) launch(b *data.Batch) error {
	r.out, r.err = r.t.Run(stepInputs(r.input, b))
	return nil
}

func (r *refTrainer) wait() (map[string]*tensor.Tensor, error) {
	out, err := r.out, r.err
	r.out, r.err = nil, nil
	return out, err
}

func (r *refTrainer) runEval(in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	return ref.Run(r.eval, in, r.t.Params)
}

func (r *refTrainer) weights() (map[string]*tensor.Tensor, map[string]*tensor.Tensor, error) {
	return r.t.Params, r.t.State, nil
}

func (r *refTrainer) close() {}

// compiledTrainer runs the compiled step on an executor device: parameters and state stay on
// the device (Feedback); the evaluation graph is a second program whose weights are copied from
// the step's before each evaluation.
type compiledTrainer struct {
	dev         executor.Device
	step        *train.StepGraph
	input       string
	prefetch    bool // stage batches in pinned memory and upload them ahead (Program.Prefetch)
	prog, evalP *executor.Program
	evalFresh   bool // evalP has the step's current weights
}

func (c *compiledTrainer) load(eval *ir.Graph, params, state map[string]*tensor.Tensor) error {
	stepArt, err := compiler.Compile(c.step.Graph, compiler.Options{})
	if err != nil {
		return fmt.Errorf("compiling the train step: %v", err)
	}
	evalArt, err := compiler.Compile(eval, compiler.Options{})
	if err != nil {
		return fmt.Errorf("compiling the evaluation: %v", err)
	}
	if c.prog, err = c.step.Load(c.dev, stepArt.Artifact, params, state); err != nil {
		return err
	}
	c.evalP, err = executor.Load(c.dev, evalArt.Artifact)
	return err
}

// prepare runs in the loader's goroutine, which Program.Stage allows.
func (c *compiledTrainer) prepare(b *data.Batch) error {
	if !c.prefetch {
		return nil
	}
	s, err := c.prog.Stage(stepInputs(c.input, b))
	b.Device = s
	return err
}

func (c *compiledTrainer) upload(b *data.Batch) error {
	if !c.prefetch {
		return nil
	}
	s, ok := b.Device.(*executor.Staged)
	if !ok {
		return fmt.Errorf("batch %d was not staged", b.Index)
	}
	return c.prog.Prefetch(s)
}

func (c *compiledTrainer) launch(b *data.Batch) error {
	c.evalFresh = false
	if c.prefetch {
		return c.prog.Launch(nil)
	}
	return c.prog.Launch(stepInputs(c.input, b))
}

func (c *compiledTrainer) wait() (map[string]*tensor.Tensor, error) {
	res, err := c.prog.Wait()
	if err != nil {
		return nil, err
	}
	return res.Outputs, nil
}

func (c *compiledTrainer) runEval(in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	if !c.evalFresh {
		params, _, err := c.weights()
		if err != nil {
			return nil, err
		}
		if err := c.evalP.SetParams(params); err != nil {
			return nil, err
		}
		c.evalFresh = true
	}
	res, err := c.evalP.Run(in)
	if err != nil {
		return nil, err
	}
	return res.Outputs, nil
}

func (c *compiledTrainer) weights() (map[string]*tensor.Tensor, map[string]*tensor.Tensor, error) {
	params, state := map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for _, p := range c.step.Graph.Params() {
		t, err := c.prog.Read(p.Name)
		if err != nil {
			return nil, nil, err
		}
		params[p.Name] = t
	}
	for _, v := range c.step.State {
		t, err := c.prog.Read(v.Name)
		if err != nil {
			return nil, nil, err
		}
		state[v.Name] = t
	}
	return params, state, nil
}

func (c *compiledTrainer) close() {
	for _, p := range []*executor.Program{c.prog, c.evalP} {
		if p != nil {
			p.Close()
		}
	}
	if cl, ok := c.dev.(interface{ Close() error }); ok {
		cl.Close()
	}
}

// evaluate returns the mean cross-entropy and the accuracy over d. The last batch, when smaller,
// is padded with blank images whose results are ignored (the rows of a classifier's inference are
// independent).
func evaluate(tr trainer, d *data.Dataset, m *model, noWorker bool) (loss, accuracy float64, err error) {
	loader := &data.Loader{Data: d, Batch: m.batch, Flatten: m.flatten, NoWorker: noWorker}
	correct := 0
	for b, err := range loader.Epoch(0) {
		if err != nil {
			return 0, 0, err
		}
		n := len(b.Indices)
		out, err := tr.runEval(map[string]*tensor.Tensor{m.input: padRows(b.X, m.batch), train.LabelsName: padRows(b.Y, m.batch)})
		if err != nil {
			return 0, 0, err
		}
		for _, l := range out[train.DefaultLoss].F[:n] {
			loss += l
		}
		correct += countCorrect(out[train.LogitsName], b.Y, n)
	}
	return loss / float64(d.N), float64(correct) / float64(d.N), nil
}

// padRows returns t with its first dimension zero-padded to n.
func padRows(t *tensor.Tensor, n int) *tensor.Tensor {
	if t.Type.Shape[0] == n {
		return t
	}
	shape := t.Type.Shape.Clone()
	shape[0] = n
	p := tensor.New(ir.Type{DType: t.Type.DType, Shape: shape})
	copy(p.F, t.F)
	copy(p.I, t.I)
	return p
}

// countCorrect counts the first n rows of logits whose largest score (the first, on a tie) is the
// label's.
func countCorrect(logits, labels *tensor.Tensor, n int) int {
	c := logits.Type.Shape[1]
	correct := 0
	for i := range n {
		row := logits.F[i*c : (i+1)*c]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		if int64(best) == labels.I[i] {
			correct++
		}
	}
	return correct
}

// num is a metric; NaN and ±Inf are written as null, which JSON has instead.
type num float64

func (v num) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 6, 64), nil
}

func pnum(v float64) *num { n := num(v); return &n }

// metricRecord is one line of the metrics log (docs/data.md): a step record when Step is set,
// else an epoch summary.
type metricRecord struct {
	Epoch         int  `json:"epoch"`
	Step          int  `json:"step,omitempty"`
	TrainLoss     num  `json:"train_loss"`
	TrainAccuracy *num `json:"train_accuracy,omitempty"`
	TestLoss      *num `json:"test_loss,omitempty"`
	TestAccuracy  *num `json:"test_accuracy,omitempty"`
	ImagesPerSec  *num `json:"images_per_sec,omitempty"`
	Seconds       *num `json:"seconds,omitempty"`
}
