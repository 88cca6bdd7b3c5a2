package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/internal/progress"
	"github.com/gcomp/gcomp/runtime/device"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/train"
)

// The checkpoint metadata gcomp train writes, train.Fit's.
const (
	metaEpoch = train.MetaEpoch
	metaSteps = train.MetaSteps
)

// logEvery is the number of steps a step record of the metrics log averages over.
const logEvery = 100

// cmdTrain trains a model on a dataset with train.Fit and prints its progress: every epoch ends
// with an evaluation on the test set, a checkpoint and a summary line.
func cmdTrain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	mf := addModelFlags(fs)
	dataSpec := fs.String("data", "fashion-mnist", "the dataset: fashion-mnist (installed by apt-get install dataset-fashion-mnist), fashion-mnist:DIR, mnist:DIR (the four IDX files of MNIST's layout, any number of images), npy:DIR (x.npy and y.npy, optionally test_x.npy and test_y.npy), npz:FILE (arrays x, y, optionally test_x, test_y) or csv:FILE (numeric columns under a header; --target names the target column)")
	targetCol := fs.String("target", "", "csv: the column of the targets (every other column is an input)")
	lossName := fs.String("loss", train.CrossEntropyLoss, "the loss, by its torch.nn name: "+strings.Join(train.Losses, ", "))
	var lf lossFlags
	lf.add(fs)
	epochs := fs.Int("epochs", 1, "epochs to train (after the checkpoint's, with --resume)")
	batch := fs.Int("batch", 0, "rows per step (default: the model's own batch); another batch re-traces the model, which must declare its batch with b.Batch")
	mf.maxB = fs.Int("max-batch", 0, "train over a batch known only at run time, in [1, N] (the model declares it with b.Batch): steps of N rows, and the epoch's last partial batch at its own size with the same build")
	optName := fs.String("optimizer", "adam", "sgd, adam or adamw, with PyTorch's defaults")
	lr := fs.Float64("lr", 0, "learning rate (default: 1e-3 for adam and adamw; sgd needs one)")
	momentum := fs.Float64("momentum", 0, "sgd: momentum (not with --lr-schedule onecycle, which cycles its own)")
	wd := fs.Float64("weight-decay", 0, "weight decay (default: 0, adamw 1e-2)")
	var sf scheduleFlags
	sf.add(fs)
	amp := fs.String("amp", "", "mixed precision: bf16 or f16 (with dynamic loss scaling)")
	devName := fs.String("device", "auto", "where to train: "+device.Names+"; or data-parallel over a list, sim:0,sim:1 (simulated GPUs), cuda:0,cuda:1 or cuda:all (NCCL), --batch being the global batch")
	nnodes := fs.Int("nnodes", 1, "data-parallel across processes (machines): how many gcomp train processes take part, each with its --device list (without --nnodes, --node-rank and --rendezvous: read from torchrun's, PyTorchJob's or Slurm's environment)")
	nodeRank := fs.Int("node-rank", 0, "with --nnodes: this process's rank, 0 to N-1 (0 serves the rendezvous and writes the checkpoint and the log)")
	rdzv := fs.String("rendezvous", "", "with --nnodes: HOST:PORT where node 0 listens and the others dial")
	rdzvTimeout := fs.Duration("timeout", 5*time.Minute, "data-parallel: how long the rendezvous and each collective wait for the other ranks")
	ncclLib := fs.String("nccl-lib", "", "libnccl.so.2 for --device cuda:0,cuda:1 (default: $GCOMP_NCCL_LIB, the usual library paths)")
	producer := fs.String("backend", "ptx", "PTX producer of the compiled step: ptx (gcomp's emitter) or nvvm (NVVM IR compiled by NVIDIA's libNVVM)")
	nvvmLib := fs.String("nvvm-lib", "", "libNVVM to load with --backend nvvm (default: $GCOMP_NVVM_LIB, the CUDA toolkit, Debian's libnvvm4, .cache/nvvm)")
	seed := fs.Uint64("seed", 0, "seed of the initial weights and of the shuffle (default: 0, or the checkpoint's with --resume)")
	save := fs.String("save", "", "checkpoint written after every epoch (safetensors: parameters, optimizer state; required)")
	resume := fs.String("resume", "", "continue training from this checkpoint")
	logPath := fs.String("log", "", "metrics log, JSON lines (appended to with --resume)")
	limit := fs.Int("limit", 0, "use only the first N training rows and at most N test rows (quick runs)")
	graphs := fs.Bool("cuda-graphs", true, "on a GPU, record a train step's kernels once as a CUDA graph and replay it every step (one launch instead of one per kernel); --cuda-graphs=false launches kernel by kernel")
	prefetch := fs.Bool("prefetch", true, "prepare the next batch in a goroutine (and on a GPU copy it to the device) while the current step runs; --prefetch=false does each in turn")
	var stats statsFlag
	fs.Var(&stats, "stats", "compile the train step and print its cost report (kernels, DRAM bytes, arena, modeled H100 time) instead of training: --stats for a table, --stats=json for JSON")
	path, err := parseModelArgs(fs, args, stdout, "MODEL --data fashion-mnist[:DIR]|mnist:DIR|npy:DIR|npz:FILE|csv:FILE [--target COL] [--loss NAME] --epochs N [--batch B] --optimizer sgd|adam|adamw [--lr X] [--momentum M] [--weight-decay W] [--lr-schedule step|cosine|onecycle] [--amp bf16|f16] --device auto|cuda:N|sim|ref [--backend ptx|nvvm] [--seed S] --save W.safetensors [--resume W.safetensors] [--log metrics.jsonl] [--limit N] [--nnodes N --node-rank R --rendezvous HOST:PORT] [--prefetch=false] [--cuda-graphs=false] [--stats[=json]]")
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	fail := func(format string, a ...any) error {
		// Package train's errors say "train: ", which this prefix says already.
		return errors.New(strings.ReplaceAll(fmt.Sprintf("gcomp train: "+format, a...), ": train: ", ": "))
	}

	ds, err := parseDataSpec(*dataSpec, *targetCol)
	if err != nil {
		return fail("%v", err)
	}
	switch {
	case *epochs < 1:
		return fail("--epochs %d: want at least 1", *epochs)
	case *batch < 0:
		return fail("--batch %d: want at least 1", *batch)
	case *mf.maxB < 0 || *mf.maxB > 0 && *batch != 0:
		return fail("--max-batch %d: want at least 1, without --batch", *mf.maxB)
	case *limit < 0:
		return fail("--limit %d: want at least 1 (or 0 for all)", *limit)
	case *save == "" && stats == "":
		return fail("--save FILE.safetensors is required")
	case set["lr"] && !(*lr > 0 && *lr <= math.MaxFloat64):
		return fail("invalid learning rate %v (--lr): want a positive number", *lr)
	case set["momentum"] && *optName != "sgd":
		return fail("--momentum is for sgd; %s has betas", *optName)
	}
	where := launch{nnodes: *nnodes, nodeRank: *nodeRank, rendezvous: *rdzv, device: *devName}
	if err := resolveLaunch(&where, set, os.LookupEnv, stderr); err != nil {
		return fail("%v", err)
	}
	*nnodes, *nodeRank, *rdzv, *devName = where.nnodes, where.nodeRank, where.rendezvous, where.device
	dataParallel := parallelDevices(*devName) || *devName == "cuda:all" || *nnodes != 1
	if _, err := device.Parse(*devName); err != nil && !dataParallel {
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
	loss, err := train.ParseLoss(*lossName)
	if err == nil {
		err = lf.apply(&loss, set)
	}
	if err != nil {
		return fail("--loss: %v", err)
	}
	prod, err := backend.New(*producer, *nvvmLib)
	if err != nil {
		return fail("--backend: %v", err)
	}
	if err := sf.check(set, *resume != ""); err != nil {
		return fail("%v", err)
	}
	if dataParallel {
		pt := &parallelTrain{path: path, devices: *devName, mf: mf, batch: *batch, opt: opt, amp: *amp, sched: &sf, loss: loss, ds: ds,
			limit: *limit, nepochs: *epochs, seed: *seed, seedSet: set["seed"], save: *save, resume: *resume, logPath: *logPath,
			stats: stats, copt: compiler.Options{Producer: prod}, graphs: *graphs, prefetch: *prefetch, ncclLib: *ncclLib,
			nnodes: *nnodes, nodeRank: *nodeRank, rendezvous: *rdzv, timeout: *rdzvTimeout, settings: trainSettings(fs, opt, loss)}
		return pt.run(stdout, stderr)
	}

	fwd, err := mf.load(path)
	if err != nil {
		return err
	}
	if own, _ := train.NewModel(fwd, fwd, loss); own != nil && *batch != 0 && *batch != own.Batch {
		// Another batch than the model's own: trace it again at that batch (a model whose
		// batch is fixed, without b.Batch, gets the loader's error naming it).
		mf.batch = batch
		if fwd, err = mf.load(path); err != nil {
			return err
		}
	}
	// The step runs the model in training mode (dropout drops, BatchNorm uses and updates batch
	// statistics); the test set is measured in eval mode, as model.train()/model.eval().
	fwdTrain, err := mf.loadTraining(path)
	if err != nil {
		return err
	}
	m, err := train.NewModel(fwd, fwdTrain, loss)
	if err == nil && *batch != 0 && *batch != m.Batch {
		x := fwd.Lookup(m.Input)
		err = fmt.Errorf("--batch %d: the model's batch is %d (input %s %s); shapes are static, so change the batch in the model", *batch, m.Batch, x.Name, x.Type)
	}
	if err != nil {
		return fail("%s: %v", path, err)
	}
	// The step is built once the data is loaded (a schedule counts its batches); the cost report
	// needs no data, and a schedule's few scalar ops cost the same whatever their constants.
	newStep := func(batches int) (*train.StepGraph, error) {
		sched, err := sf.schedule(*resume, *epochs, batches)
		if err != nil {
			return nil, err
		}
		return m.Step(opt, train.Options{AMP: *amp, Seed: *seed, Schedule: sched})
	}
	copt := compiler.Options{Producer: prod}
	if stats != "" {
		step, err := newStep(1)
		if err != nil {
			return fail("%s: %v", path, err)
		}
		// The whole step (forward, backward, update) as the devices run it.
		res, err := compiler.Compile(step.Graph, train.StepCompilerOptions(copt))
		if err != nil {
			return fail("%s: %v", path, err)
		}
		if stats == "json" {
			stdout.Write(res.Passes.Stats.JSON())
		} else {
			fmt.Fprintf(stdout, "train step of %s, %s, batch %d:\n", path, describeOptimizer(opt, *amp), m.Batch)
			res.Passes.Stats.WriteTable(stdout)
		}
		return nil
	}
	// Only the rows --limit keeps are held in memory, whatever the files' headers claim.
	trainSet, testSet, err := ds.load(*limit)
	if err != nil {
		return fail("%v", err)
	}

	step, err := newStep(train.StepsPerEpoch(trainSet.Len(), m.Batch, *mf.maxB > 0))
	if err != nil {
		return fail("%s: %v", path, err)
	}
	var from *train.Checkpoint
	if *resume != "" {
		if from, err = step.Resume(*resume); err != nil {
			return fail("%v", err)
		}
		if !set["seed"] {
			*seed = from.Seed
		}
	}
	sel, err := device.Open(*devName, device.Options{Driver: testDriver, Sim: func() (executor.Device, error) {
		// Training runs many steps: bounds are enforced, the race and barrier checks are left to tests.
		return simdev.New(simdev.Options{NoCheck: true}), nil
	}})
	if err != nil {
		return fail("%v", err)
	}
	if cl, ok := sel.Device.(interface{ Close() error }); ok {
		defer cl.Close()
	}

	p := &trainPrinter{stdout: stdout, stderr: stderr, unit: "rows", loss: loss, logPath: *logPath}
	if ds.images() {
		p.unit = "images"
	}
	err = p.fit(m, train.FitOptions{
		Step: step, Device: sel.Device, Compiler: copt,
		Train: trainSet, Test: testSet, Epochs: *epochs, Seed: *seed, Resume: from, Save: *save,
		NoPrefetch: !*prefetch, NoCUDAGraphs: !*graphs,
	}, from, func(s train.Start) {
		// Printed once the data is checked, so that a mistake in it is the only line.
		if sel.Fallback != "" {
			fmt.Fprintf(stderr, "gcomp train: no usable GPU (%s): training on the PTX simulator\n", sel.Fallback)
		}
		fmt.Fprintf(stderr, "gcomp train: %s on %s: %d training %s, %d steps of %d per epoch, %s\n",
			path, sel.Spec, trainSet.Len(), p.unit, s.Batches, m.Batch, describeOptimizer(opt, *amp)+describeSchedule(step.Schedule))
	})
	if err != nil {
		return fail("%s on %s: %v", path, sel.Spec, err)
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

// trainPrinter shows Fit's progress: a progress bar per epoch on stderr, a summary line per
// epoch on stdout, and the metrics log.
type trainPrinter struct {
	stdout, stderr io.Writer
	unit           string
	loss           train.Loss
	logPath        string
	log            *os.File

	bar      *progress.Bar
	logLoss  float64
	logSteps int
	logStart time.Time
}

// fit runs train.Fit with o, printing: start once the data is checked and the step loaded, then
// the progress and the metrics log (appended to after from's records with --resume).
func (p *trainPrinter) fit(m *train.Model, o train.FitOptions, from *train.Checkpoint, start func(train.Start)) error {
	o.OnStart = func(s train.Start) error {
		if err := p.openLog(from); err != nil {
			return err
		}
		start(s)
		return nil
	}
	o.OnStep, o.OnEpoch = p.step, p.epoch
	_, err := train.Fit(m, o)
	if p.log != nil {
		p.log.Close()
	}
	return err
}

// openLog opens the metrics log: truncated, or with --resume cut back to the checkpoint's
// records (those of an interrupted epoch are dropped, not repeated) and appended to.
func (p *trainPrinter) openLog(from *train.Checkpoint) error {
	if p.logPath == "" {
		return nil
	}
	mode := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if from != nil {
		if err := truncateLog(p.logPath, from.Epoch, from.Steps); err != nil {
			return err
		}
		mode = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	var err error
	p.log, err = os.OpenFile(p.logPath, mode, 0o644)
	return err
}

func (p *trainPrinter) write(r metricRecord) error {
	if p.log == nil {
		return nil
	}
	line, _ := json.Marshal(r)
	if _, err := p.log.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%s: %v", p.logPath, err)
	}
	return nil
}

func (p *trainPrinter) step(s train.StepEnd) error {
	if s.Index == 0 {
		p.bar = progress.New(p.stderr, fmt.Sprintf("epoch %d/%d", s.Epoch, s.LastEpoch), p.unit, s.Batches*s.Rows)
		p.logLoss, p.logSteps, p.logStart = 0, 0, time.Now()
	}
	p.bar.Add(s.Rows, s.Loss)
	p.logLoss += s.Loss
	p.logSteps++
	if s.Step%logEvery == 0 || s.Index == s.Batches-1 {
		now := time.Now()
		rate := float64(p.logSteps*s.Rows) / now.Sub(p.logStart).Seconds()
		if err := p.write(metricRecord{Epoch: s.Epoch, Step: s.Step, TrainLoss: num(p.logLoss / float64(p.logSteps)), ImagesPerSec: pnum(rate)}); err != nil {
			return err
		}
		p.logLoss, p.logSteps, p.logStart = 0, 0, now
	}
	if s.Index == s.Batches-1 {
		p.bar.Finish()
	}
	return nil
}

func (p *trainPrinter) epoch(e train.EpochEnd) error {
	seconds := e.Time.Seconds()
	rate := float64(e.Train.Rows) / e.TrainTime.Seconds()
	line := fmt.Sprintf("epoch %d/%d: train loss %.4f%s", e.Epoch, e.LastEpoch, e.Train.Loss, describeMetrics("train", e.Train))
	if e.Test != nil {
		line += fmt.Sprintf(", test loss %.4f%s", e.Test.Loss, describeMetrics("test", *e.Test))
	}
	fmt.Fprintf(p.stdout, "%s (%.1f s, %.0f %s/s)\n", line, seconds, rate, p.unit)
	r := metricRecord{Epoch: e.Epoch, TrainLoss: num(e.Train.Loss), TrainAccuracy: opt(e.Train.Accuracy),
		TrainMSE: opt(e.Train.MSE), TrainMAE: opt(e.Train.MAE), ImagesPerSec: pnum(rate), Seconds: pnum(seconds)}
	if t := e.Test; t != nil {
		r.TestLoss, r.TestAccuracy, r.TestMSE, r.TestMAE = pnum(t.Loss), opt(t.Accuracy), opt(t.MSE), opt(t.MAE)
	}
	return p.write(r)
}

// describeMetrics prints the metrics that fit the loss.
func describeMetrics(split string, m train.Metrics) string {
	s := ""
	if !math.IsNaN(m.Accuracy) {
		s += fmt.Sprintf(", %s accuracy %.2f%%", split, 100*m.Accuracy)
	}
	if !math.IsNaN(m.MSE) {
		s += fmt.Sprintf(", %s MSE %.4g, %s MAE %.4g", split, m.MSE, split, m.MAE)
	}
	return s
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

// opt is a metric that a loss may not have (NaN): absent from the record then.
func opt(v float64) *num {
	if math.IsNaN(v) {
		return nil
	}
	return pnum(v)
}

// metricRecord is one line of the metrics log (docs/data.md): a step record when Step is set,
// else an epoch summary.
type metricRecord struct {
	Epoch         int  `json:"epoch"`
	Step          int  `json:"step,omitempty"`
	TrainLoss     num  `json:"train_loss"`
	TrainAccuracy *num `json:"train_accuracy,omitempty"`
	TrainMSE      *num `json:"train_mse,omitempty"`
	TrainMAE      *num `json:"train_mae,omitempty"`
	TestLoss      *num `json:"test_loss,omitempty"`
	TestAccuracy  *num `json:"test_accuracy,omitempty"`
	TestMSE       *num `json:"test_mse,omitempty"`
	TestMAE       *num `json:"test_mae,omitempty"`
	ImagesPerSec  *num `json:"images_per_sec,omitempty"`
	Seconds       *num `json:"seconds,omitempty"`
}
