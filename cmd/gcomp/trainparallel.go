package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/collective"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/device"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/nccl"
	"github.com/gcomp/gcomp/runtime/parallel"
	"github.com/gcomp/gcomp/runtime/rendezvous"
	"github.com/gcomp/gcomp/runtime/simrank"
	"github.com/gcomp/gcomp/train"
)

// parallelTrain is gcomp train over a device list or several processes (--nnodes): what cmdTrain
// parsed.
type parallelTrain struct {
	path, devices string
	mf            modelFlags
	batch         int // --batch, the global batch (0: the model's own)
	opt           train.Optimizer
	amp           string
	sched         *scheduleFlags
	loss          train.Loss
	ds            dataSpec
	limit         int
	nepochs       int
	seed          uint64
	seedSet       bool
	save, resume  string
	logPath       string
	stats         statsFlag
	copt          compiler.Options
	graphs        bool
	prefetch      bool
	ncclLib       string
	// Several processes: --nnodes, --node-rank, --rendezvous; timeout bounds the rendezvous and
	// every collective.
	nnodes, nodeRank int
	rendezvous       string
	timeout          time.Duration
	settings         []rendezvous.Setting // compared at the rendezvous
}

// expandDevices parses --device for data-parallel training: a list (sim:0,sim:1; cuda:0,cuda:1),
// or cuda:all, every GPU the driver sees.
func expandDevices(list string) ([]parallel.Spec, error) {
	if list == "cuda:all" {
		n := device.Count()
		if n < 1 {
			return nil, fmt.Errorf("cuda:all: no GPU (gcomp devices says why)")
		}
		names := make([]string, n)
		for i := range names {
			names[i] = "cuda:" + strconv.Itoa(i)
		}
		list = strings.Join(names, ",")
	}
	return parallel.ParseDevices(list)
}

// run trains data-parallel: the model traced at the global batch divided by the ranks, one rank
// per device, the gradients averaged over the ranks (train.Parallel).
func (pt *parallelTrain) run(stdout, stderr io.Writer) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("gcomp train: "+strings.ReplaceAll(format, ": train: ", ": "), a...)
	}
	specs, err := expandDevices(pt.devices)
	if err != nil {
		return fail("--device: %v", err)
	}
	switch {
	case pt.nnodes < 1:
		return fail("--nnodes %d: want at least 1", pt.nnodes)
	case pt.nodeRank < 0 || pt.nodeRank >= pt.nnodes:
		return fail("--node-rank %d: want one of 0..%d", pt.nodeRank, pt.nnodes-1)
	case pt.nnodes > 1 && pt.rendezvous == "":
		return fail("--nnodes %d: --rendezvous HOST:PORT (node 0's) is required", pt.nnodes)
	}
	sim := strings.HasPrefix(specs[0].Name, "sim")

	// The global batch: --batch, else --max-batch (a symbolic batch: the epoch's last partial
	// batch runs too, split over the ranks), else the model's own.
	_, ownBatch, err := pt.mf.loadModelBatch(pt.path, 0)
	if err != nil {
		return err
	}
	maxB := 0
	if pt.mf.maxB != nil {
		maxB = *pt.mf.maxB
	}
	global := pt.batch
	if maxB > 0 {
		global = maxB
	}
	if global == 0 {
		global = ownBatch
	}
	if global == 0 {
		return fail("%s: the model declares no batch (b.Batch) to split over the ranks", pt.path)
	}

	// Across processes: node 0 serves the rendezvous (and the collective's hub or NCCL's id).
	world, first := len(specs), 0
	var ln net.Listener // node 0's collective listener (simulated devices)
	var w *rendezvous.World
	if pt.nnodes > 1 {
		hash, err := modelHash(pt.path)
		if err != nil {
			return fail("%v", err)
		}
		cfg := rendezvous.Config{Addr: pt.rendezvous, NNodes: pt.nnodes, NodeRank: pt.nodeRank, LocalDevices: len(specs),
			ModelHash: hash, Batch: global, Settings: pt.settings, Timeout: pt.timeout}
		if pt.nodeRank == 0 {
			if cfg.Payload, ln, err = pt.payload(sim); err != nil {
				return fail("%v", err)
			}
			defer func() {
				if ln != nil {
					ln.Close()
				}
			}()
		}
		if w, err = rendezvous.Join(cfg); err != nil {
			return fail("%v", err)
		}
		world, first = w.Size, w.FirstRank
	}
	if global%world != 0 {
		flag := "--batch"
		if maxB > 0 {
			flag = "--max-batch"
		}
		return fail("%s %d does not split evenly over %d ranks", flag, global, world)
	}
	per := global / world
	if maxB > 0 {
		pt.mf.maxB = &per // each rank's step over a batch in [1, per]
	} else {
		pt.mf.batch = &per
	}
	fwd, err := pt.mf.load(pt.path)
	if err != nil {
		return err
	}
	fwdTrain, err := pt.mf.loadTraining(pt.path)
	if err != nil {
		return err
	}
	m, err := train.NewModel(fwd, fwdTrain, pt.loss)
	if err == nil && m.Batch != per {
		err = fmt.Errorf("traced at batch %d per rank, the model's input has %d rows", per, m.Batch)
	}
	if err != nil {
		return fail("%s: %v", pt.path, err)
	}
	if pt.stats != "" {
		return pt.printStats(m, world, global, stdout)
	}
	trainSet, testSet, err := pt.ds.load(pt.limit)
	if err != nil {
		return fail("%v", err)
	}
	// The schedule counts global steps, the same on every rank: an epoch has as many as the
	// global batch takes.
	sched, err := pt.sched.schedule(pt.resume, pt.nepochs, train.StepsPerEpoch(trainSet.Len(), global, maxB > 0))
	if err != nil {
		return fail("%s: %v", pt.path, err)
	}
	step, err := m.Step(pt.opt, train.Options{AMP: pt.amp, Seed: pt.seed, Schedule: sched})
	if err != nil {
		return fail("%s: %v", pt.path, err)
	}
	var from *train.Checkpoint
	if pt.resume != "" {
		if from, err = step.Resume(pt.resume); err != nil {
			return fail("%v", err)
		}
		if !pt.seedSet {
			pt.seed = from.Seed
		}
	}

	devs := make([]executor.Device, 0, len(specs))
	defer func() {
		for _, d := range devs {
			d.Close()
		}
	}()
	for _, s := range specs {
		dev, err := openRank(s, "", true)
		if err != nil {
			return fail("%s: %v", s.Name, err)
		}
		devs = append(devs, dev)
	}
	copts := collective.Options{Timeout: pt.timeout}
	var comms func([]collective.Memory) ([]collective.Comm, error)
	switch {
	case sim && pt.nnodes > 1:
		comms = func(mems []collective.Memory) ([]collective.Comm, error) {
			return tcpComms(ln, string(w.Payload), first, world, mems, copts)
		}
		defer func() { ln = nil }() // the hub's communicator closes it
	case !sim:
		comms = func([]collective.Memory) ([]collective.Comm, error) {
			var id []byte
			if w != nil {
				id = w.Payload
			}
			return ncclComms(pt.ncclLib, devs, specs, id, first, world)
		}
	}
	lead := pt.nodeRank == 0
	p := &trainPrinter{stdout: stdout, stderr: stderr, unit: "rows", loss: pt.loss}
	if lead {
		p.logPath = pt.logPath // rank 0 alone writes the metrics log
	}
	if pt.ds.images() {
		p.unit = "images"
	}
	err = p.fit(m, train.FitOptions{
		Optimizer: pt.opt, AMP: pt.amp, Schedule: sched, Compiler: pt.copt,
		Parallel: &train.Parallel{Devices: devs, Comms: comms},
		Train:    trainSet, Test: testSet, Epochs: pt.nepochs, Seed: pt.seed, Resume: from, Save: pt.save,
		NoPrefetch: !pt.prefetch, NoCUDAGraphs: !pt.graphs,
	}, from, func(s train.Start) {
		fmt.Fprintf(stderr, "gcomp train: %s on %s (ranks %d..%d of %d): %d training %s, %d steps of %d (%d per rank) per epoch, %s\n",
			pt.path, pt.devices, first, first+len(specs)-1, world, trainSet.Len(), p.unit, s.Batches, global, per, describeOptimizer(pt.opt, pt.amp)+describeSchedule(sched))
	})
	if err != nil {
		return fail("%s on %s: %v", pt.path, pt.devices, err)
	}
	return nil
}

// openRank opens a rank's device: a GPU, or for sim:N a simulated GPU, runtime/cuda's device
// over the simulator-backed driver (runtime/simrank, the simulator's checks off with noCheck),
// whose collectives are stream-ordered as NCCL's are on a GPU.
func openRank(s parallel.Spec, cudaLib string, noCheck bool) (executor.Device, error) {
	if strings.HasPrefix(s.Name, "sim") {
		return simrank.Open(simdriver.Options{NoCheck: noCheck})
	}
	sel, err := device.Open(s.Open, device.Options{CUDALib: cudaLib, Driver: testDriver})
	if err != nil {
		return nil, err
	}
	return sel.Device, nil
}

// modelHash identifies the model's file, which every node must train.
func modelHash(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// payload is what node 0 hands every node: for simulated devices the address of the collective's
// hub, listening on the rendezvous host; for GPUs NCCL's unique id.
func (pt *parallelTrain) payload(sim bool) ([]byte, net.Listener, error) {
	if !sim {
		lib, err := nccl.Load(pt.ncclLib)
		if err != nil {
			return nil, nil, err
		}
		id, err := lib.GetUniqueID()
		if err != nil {
			return nil, nil, err
		}
		return id[:], nil, nil
	}
	host, _, err := net.SplitHostPort(pt.rendezvous)
	if err != nil {
		return nil, nil, fmt.Errorf("--rendezvous %s: %v", pt.rendezvous, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, nil, fmt.Errorf("listening for the collective: %v", err)
	}
	return []byte(ln.Addr().String()), ln, nil
}

// tcpComms makes the simulated collective's ranks first, first+1, … of world over TCP: rank 0
// serves it on ln, the others dial addr.
func tcpComms(ln net.Listener, addr string, first, world int, mems []collective.Memory, opt collective.Options) ([]collective.Comm, error) {
	comms, i, err := together(len(mems), func(i int) (collective.Comm, error) {
		if r := first + i; r != 0 {
			return collective.DialTCP(addr, r, world, mems[i], opt)
		}
		return collective.ServeTCP(ln, world, mems[i], opt)
	})
	if err != nil {
		return nil, fmt.Errorf("rank %d: %w", first+i, err)
	}
	return comms, nil
}

// together makes n communicators at once, each in a goroutine (their ranks join each other):
// all of them, or the first failure by index, after aborting those made.
func together[C interface{ Abort() error }](n int, make1 func(i int) (C, error)) ([]C, int, error) {
	made := make([]C, n)
	errs := make([]error, n)
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			made[i], errs[i] = make1(i)
		}()
	}
	for range n {
		<-done
	}
	for i, err := range errs {
		if err != nil {
			for j, c := range made {
				if errs[j] == nil {
					c.Abort()
				}
			}
			return nil, i, err
		}
	}
	return made, 0, nil
}

// ncclComms makes NCCL communicators for the GPUs of devs: ncclCommInitAll on one machine (id
// nil), else ncclCommInitRank with node 0's id, one goroutine per GPU.
func ncclComms(libPath string, devs []executor.Device, specs []parallel.Spec, id []byte, first, world int) ([]collective.Comm, error) {
	lib, err := nccl.Load(libPath)
	if err != nil {
		return nil, err
	}
	type gpu interface {
		MakeCurrent() error
		SyncStream(s cuda.Stream) error
	}
	var _ gpu = (*cuda.Device)(nil) // a signature change is a build error, not a skipped GPU
	gpus := make([]gpu, len(devs))
	for i, d := range devs {
		g, ok := d.(gpu)
		if !ok {
			return nil, fmt.Errorf("%s is not a CUDA device", specs[i].Name)
		}
		gpus[i] = g
	}
	var ncs []*nccl.Comm
	if id == nil {
		ordinals := make([]int, len(specs))
		for i, s := range specs {
			if ordinals[i], err = strconv.Atoi(strings.TrimPrefix(s.Name, "cuda:")); err != nil {
				return nil, fmt.Errorf("%s: not cuda:N", s.Name)
			}
		}
		if ncs, err = lib.CommInitAll(ordinals); err != nil {
			return nil, err
		}
	} else {
		var uid nccl.UniqueID
		if len(id) != len(uid) {
			return nil, fmt.Errorf("node 0 sent a %d-byte NCCL id, want %d", len(id), len(uid))
		}
		copy(uid[:], id)
		var i int
		ncs, i, err = together(len(devs), func(i int) (*nccl.Comm, error) {
			runtime.LockOSThread() // the device's context is current on this thread
			defer runtime.UnlockOSThread()
			if err := gpus[i].MakeCurrent(); err != nil {
				return nil, err
			}
			return lib.CommInitRank(world, uid, first+i)
		})
		if err != nil {
			return nil, fmt.Errorf("%s (rank %d): %w", specs[i].Name, first+i, err)
		}
	}
	comms := make([]collective.Comm, len(ncs))
	for i, c := range ncs {
		g := gpus[i]
		comms[i] = collective.FromNCCL(lib, c, func(s collective.Stream) error { return g.SyncStream(cuda.Stream(s)) })
	}
	return comms, nil
}

// printStats prints the step's cost report at the per-rank batch and the communication model of
// averaging its gradients over world ranks (passes.CommCost).
func (pt *parallelTrain) printStats(m *train.Model, world, global int, stdout io.Writer) error {
	// The report needs no data: a schedule's few scalar ops cost the same whatever its length.
	sched, err := pt.sched.schedule(pt.resume, pt.nepochs, 1)
	if err != nil {
		return fmt.Errorf("gcomp train: %s: %v", pt.path, err)
	}
	step, err := m.Step(pt.opt, train.Options{AMP: pt.amp, Seed: pt.seed, Schedule: sched})
	if err != nil {
		return fmt.Errorf("gcomp train: %s: %v", pt.path, err)
	}
	res, err := compiler.Compile(step.Graph, train.StepCompilerOptions(pt.copt))
	if err != nil {
		return fmt.Errorf("gcomp train: %s: %v", pt.path, err)
	}
	in := passes.CommInput{Ranks: world, ComputeUS: res.Passes.Stats.ModeledTimeUS}
	for _, p := range step.Params {
		in.Grads = append(in.Grads, passes.Grad{Name: p, Bytes: int64(step.Graph.Lookup(p).Type.Bytes())})
	}
	comm, err := passes.CommCost(in)
	if err != nil {
		return fmt.Errorf("gcomp train: %v", err)
	}
	if pt.stats == "json" {
		out, _ := json.Marshal(struct {
			Step *passes.Stats      `json:"step"`
			Comm *passes.CommReport `json:"communication"`
		}{res.Passes.Stats, comm})
		stdout.Write(append(out, '\n'))
		return nil
	}
	fmt.Fprintf(stdout, "train step of %s, %s, global batch %d over %d ranks (%d per rank), per rank:\n", pt.path, describeOptimizer(pt.opt, pt.amp), global, world, global/world)
	res.Passes.Stats.WriteTable(stdout)
	fmt.Fprintln(stdout, "gradient all-reduce:")
	comm.WriteTable(stdout)
	return nil
}
