package lm

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/internal/lmtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// The measurement that settles issue 25's decode target on a GPU (decodegraph_gpu_test.go runs it
// on GPT-2 small): the decode step replayed as a CUDA graph, back to back, built for sm_80 and for
// sm_90, whose launches are programmatic dependent launches (PDL), and the sm_90 kernels once more
// with the PDL attribute taken off their launches, so that the difference is the launch alone.
// Beside it, graphs of empty kernels measure what a graph node's launch costs (the cost model's
// 0.875 µs is CUDA.jl's figure). Here the same harness runs a small GPT-2 through the CUDA device
// over the simulator-backed driver: its times mean nothing, its logits and replay counts do.

// replayDevice is the CUDA device with a hand on the graphs the executor records, so that the
// measurement replays the decode step's graph alone: no input copies, no logits read back, no
// synchronization between steps.
type replayDevice struct {
	*cuda.Device
	replays []executor.Replay
}

func (d *replayDevice) EndCapture() (executor.Replay, error) {
	r, err := d.Device.EndCapture()
	if err == nil {
		d.replays = append(d.replays, r)
	}
	return r, err
}

// replaySchedule is how many replays are timed: warm replays first, then trials of steps
// replays each, the device synchronized before and after each trial.
type replaySchedule struct{ warm, steps, trials int }

// launches is how many graph launches the schedule makes.
func (s replaySchedule) launches() int { return s.warm + s.steps*s.trials }

// replayUS is the median over the trials of the wall time per replay, in µs.
func replayUS(dev *cuda.Device, r executor.Replay, s replaySchedule) (float64, error) {
	for range s.warm {
		if err := r.Launch(); err != nil {
			return 0, err
		}
	}
	if err := dev.Sync(); err != nil {
		return 0, err
	}
	times := make([]time.Duration, s.trials)
	for i := range times {
		start := time.Now()
		for range s.steps {
			if err := r.Launch(); err != nil {
				return 0, err
			}
		}
		if err := dev.Sync(); err != nil {
			return 0, err
		}
		times[i] = time.Since(start)
	}
	return float64(executor.Median(times).Nanoseconds()) / 1e3 / float64(s.steps), nil
}

// hashModel is a model of c with lm's hash weights (lmtest.HashWeights), as the tests' checkpoints.
func hashModel(t testing.TB, c Config) *Model {
	t.Helper()
	g, err := ProgramGraph(c, "decode", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	weights := map[string]*tensor.Tensor{}
	for _, p := range g.Params() {
		weights[p.Name] = hashTensor(p.Name, p.Type)
	}
	m, err := New(c, weights)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func hashTensor(name string, typ ir.Type) *tensor.Tensor {
	x := tensor.New(typ)
	for i, v := range lmtest.HashWeights(name, x.Len()) {
		x.F[i] = float64(v)
	}
	return x
}

// decodeLaunch is one way of launching the decode step: its kernels built for sm, their
// programmatic dependent launches kept or taken off (the kernels' griddepcontrol.wait then
// returns at once).
type decodeLaunch struct {
	name string
	sm   int
	pdl  bool
}

func (l decodeLaunch) String() string { return l.name }

var (
	launch80      = decodeLaunch{"sm_80", 80, false}
	launch90NoPDL = decodeLaunch{"sm_90 without PDL", 90, false}
	launch90      = decodeLaunch{"sm_90 with PDL", 90, true}
)

// decodeTiming is what one decodeLaunch measured.
type decodeTiming struct {
	launch       decodeLaunch
	kernels, pdl int     // kernels per step, and of them launched as PDL
	stepUS       float64 // per replay of the step's graph
	logits       []float32
}

// decodePDLReport is the whole measurement.
type decodePDLReport struct {
	device        string
	pos           int
	readOnceUS    float64       // weights and cache read once at 3.35 TB/s (bench_test.go's yardstick)
	model         *passes.Stats // the cost model's report of the last target built
	modelSM       int
	timings       []decodeTiming
	emptyKernels  int     // the empty-kernel graphs' length
	empty1US      float64 // a graph of one empty kernel
	emptyUS       float64 // a graph of emptyKernels empty kernels
	emptyPDLUS    float64 // the same, each after the first a PDL (sm_90; 0 elsewhere)
	refDiff       []float64
	graphLaunches int
}

// decodeLogitsTol bounds ‖logits − ref‖/‖ref‖ of one decode step (f32 kernels against the
// reference interpreter, as lm's other device tests).
const decodeLogitsTol = 1e-4

// measureDecodePDL builds m's decode step (batch 1) for each of launches, runs one step at the
// last position of the cache (so attention reads all of it, as the read-once yardstick counts it)
// over a hash-filled cache, checks its logits against the reference interpreter, then times
// replays of its CUDA graph under s; and times graphs of empty kernels. It fails only on wrong
// results or failing launches, never on times.
func measureDecodePDL(t *testing.T, dev *cuda.Device, m *Model, launches []decodeLaunch, s replaySchedule) *decodePDLReport {
	t.Helper()
	g, err := ProgramGraph(m.Config, "decode", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	pos := m.MaxSeq() - 1
	in := map[string]*tensor.Tensor{inTokens: intTensor([]int{464 % m.Vocab}, 1, 1), inPos: intTensor([]int{pos}, 1)}
	cache := map[string]*tensor.Tensor{}
	var readBytes int
	for _, v := range append(g.Inputs(), g.Params()...) {
		readBytes += v.Type.Bytes()
		if strings.HasPrefix(v.Name, inCache+".") {
			cache[v.Name] = hashTensor(v.Name, v.Type)
		}
	}
	refIn := map[string]*tensor.Tensor{}
	for name, x := range in {
		refIn[name] = x
	}
	for name, x := range cache {
		refIn[name] = x
	}
	want, err := ref.Run(g, refIn, m.weights)
	if err != nil {
		t.Fatal(err)
	}
	wantLogits := float32s(want[outLogits])
	rep := &decodePDLReport{device: dev.Name(), pos: pos, readOnceUS: float64(readBytes) / 3.35e6}

	arts := map[int]*artifact.Artifact{}
	for _, l := range launches {
		art := arts[l.sm]
		if art == nil {
			res, err := compiler.Compile(g, compiler.Options{Target: ptx.Target{SM: l.sm}})
			if err != nil {
				t.Fatal(err)
			}
			art, arts[l.sm] = res.Artifact, res.Artifact
			rep.model, rep.modelSM = res.Passes.Stats, l.sm // sm_90 models what sm_80 does (pdl_test.go)
		}
		tm := measureDecodeLaunch(t, dev, art, l, m, in, cache, s)
		d := normDiff(tm.logits, wantLogits)
		if d > decodeLogitsTol {
			t.Errorf("%s: the step's logits differ from the reference interpreter's by %.3g (normwise, tolerance %g)", l, d, decodeLogitsTol)
		}
		rep.refDiff = append(rep.refDiff, d)
		rep.timings = append(rep.timings, tm)
		rep.graphLaunches += 2 + s.launches()
	}

	// Graphs of empty kernels as long as the decode step's, and of one: the difference per kernel
	// is what a graph node's launch costs, without any work in the kernels.
	rep.emptyKernels = rep.timings[0].kernels
	pdl := dev.Info().Arch.Major >= 9
	for _, e := range []struct {
		n   int
		pdl bool
		us  *float64
	}{{1, false, &rep.empty1US}, {rep.emptyKernels, false, &rep.emptyUS}, {rep.emptyKernels, true, &rep.emptyPDLUS}} {
		if e.pdl && !pdl {
			continue
		}
		if *e.us, err = emptyGraphUS(dev, e.n, e.pdl, s); err != nil {
			t.Fatal(err)
		}
		rep.graphLaunches += s.launches()
	}
	return rep
}

// measureDecodeLaunch loads art (with its PDL launches taken off unless l keeps them) on dev,
// runs the step once (recording its graph), times the graph's replays, and runs the step again:
// the replays rewrote the same cache row with the same values, so the logits are the same bits.
func measureDecodeLaunch(t *testing.T, dev *cuda.Device, art *artifact.Artifact, l decodeLaunch, m *Model, in, cache map[string]*tensor.Tensor, s replaySchedule) decodeTiming {
	t.Helper()
	a := *art
	if !l.pdl {
		plan := *a.Plan
		plan.Kernels = slices.Clone(plan.Kernels)
		for i := range plan.Kernels {
			plan.Kernels[i].PDL = false
		}
		a.Plan = &plan
	}
	tm := decodeTiming{launch: l, kernels: len(a.Plan.Kernels)}
	for _, k := range a.Plan.Kernels {
		if k.PDL {
			tm.pdl++
		}
	}
	rd := &replayDevice{Device: dev}
	p, err := executor.Load(rd, &a)
	if err != nil {
		t.Fatalf("%s: %v", l, err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}()
	for _, err := range []error{p.SetParams(m.weights), p.Feedback(m.cacheStates()), p.SetState(cache)} {
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	if !p.UseGraphs(true) {
		t.Fatalf("%s: the CUDA device does not record graphs", l)
	}
	first, err := p.Run(in)
	if err != nil {
		t.Fatalf("%s: %v", l, err)
	}
	if len(rd.replays) != 1 {
		t.Fatalf("%s: the step recorded %d graphs, want 1", l, len(rd.replays))
	}
	if tm.stepUS, err = replayUS(dev, rd.replays[0], s); err != nil {
		t.Fatalf("%s: replaying the step: %v", l, err)
	}
	again, err := p.Run(in)
	if err != nil {
		t.Fatalf("%s: %v", l, err)
	}
	if len(rd.replays) != 1 {
		t.Errorf("%s: the second run recorded a graph again (%d in all)", l, len(rd.replays))
	}
	if !bytes.Equal(first.Outputs[outLogits].Bytes(), again.Outputs[outLogits].Bytes()) {
		t.Errorf("%s: after %d replays the step's logits differ from the first run's", l, s.launches())
	}
	tm.logits = float32s(first.Outputs[outLogits])
	return tm
}

func float32s(x *tensor.Tensor) []float32 {
	out := make([]float32, len(x.F))
	for i, v := range x.F {
		out[i] = float32(v)
	}
	return out
}

// emptyKernelPTX is one kernel that does nothing; for PDL it keeps codegen/ptx's contract
// (launch_dependents first, then the wait), as every kernel of a decode step at sm_90 does.
func emptyKernelPTX(pdl bool) string {
	if pdl {
		return ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry empty()\n{\n\tgriddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;\n\tret;\n}\n"
	}
	return ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry empty()\n{\n\tret;\n}\n"
}

// emptyGraphUS is the time per replay of a CUDA graph of n launches of an empty kernel (one block
// of 32 threads), each after the first a programmatic dependent launch when pdl is set.
func emptyGraphUS(dev *cuda.Device, n int, pdl bool, s replaySchedule) (float64, error) {
	mod, err := dev.Load([]byte(emptyKernelPTX(pdl)))
	if err != nil {
		return 0, err
	}
	defer mod.Close()
	if err := dev.BeginCapture(); err != nil {
		return 0, err
	}
	for i := range n {
		cfg := executor.LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, PDL: pdl && i > 0}
		if _, err := mod.Launch("empty", cfg, nil); err != nil {
			if r, endErr := dev.EndCapture(); endErr == nil {
				r.Close()
			}
			return 0, err
		}
	}
	r, err := dev.EndCapture()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return replayUS(dev, r, s)
}

// table is the report as t.Log prints it.
func (r *decodePDLReport) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "decode step, batch 1, at position %d on %s; read-once %.1f µs (weights + cache at 3.35 TB/s)\n", r.pos, r.device, r.readOnceUS)
	if r.model != nil {
		fmt.Fprintf(&b, "cost model at sm_%d: %d kernels, %.1f µs in kernels, %.1f µs as a CUDA graph (%.3f× read-once; %.3f µs per kernel's graph launch)\n",
			r.modelSM, r.model.Kernels, r.model.ModeledKernelTimeUS, r.model.ModeledGraphTimeUS, r.model.ModeledGraphTimeUS/r.readOnceUS, (r.model.ModeledGraphTimeUS-r.model.ModeledKernelTimeUS)/float64(r.model.Kernels))
	}
	fmt.Fprintf(&b, "%-18s %8s %5s %12s %10s %12s\n", "graph", "kernels", "pdl", "µs/step", "×read-once", "logits err")
	for i, tm := range r.timings {
		fmt.Fprintf(&b, "%-18s %8d %5d %12.2f %10.3f %12.2g\n", tm.launch, tm.kernels, tm.pdl, tm.stepUS, tm.stepUS/r.readOnceUS, r.refDiff[i])
	}
	by := map[decodeLaunch]decodeTiming{}
	for _, tm := range r.timings {
		by[tm.launch] = tm
	}
	if t90, ok := by[launch90]; ok && t90.kernels > 1 {
		if t80, ok := by[launch80]; ok {
			fmt.Fprintf(&b, "PDL hides (t80 − t90)/(kernels − 1) = %.3f µs per dependent launch\n", (t80.stepUS-t90.stepUS)/float64(t90.kernels-1))
		}
		if off, ok := by[launch90NoPDL]; ok {
			fmt.Fprintf(&b, "PDL hides (t90 without PDL − t90)/(kernels − 1) = %.3f µs per dependent launch (same kernels)\n", (off.stepUS-t90.stepUS)/float64(t90.kernels-1))
		}
		fmt.Fprintf(&b, "issue 25's target, decode within 1.3× read-once: sm_90 with PDL at %.3f×\n", t90.stepUS/r.readOnceUS)
	}
	if n := r.emptyKernels; n > 1 {
		fmt.Fprintf(&b, "empty kernels: a graph of 1 takes %.2f µs, of %d %.2f µs: %.3f µs per graph node ((t%d − t1)/%d; the model charges 0.875)\n",
			r.empty1US, n, r.emptyUS, (r.emptyUS-r.empty1US)/float64(n-1), n, n-1)
		if r.emptyPDLUS > 0 {
			fmt.Fprintf(&b, "empty kernels as PDL: a graph of %d takes %.2f µs: %.3f µs per node\n", n, r.emptyPDLUS, (r.emptyPDLUS-r.empty1US)/float64(n-1))
		}
	}
	return b.String()
}

// TestDecodePDLHarnessSim runs the GPU measurement's harness on a small GPT-2 through the CUDA
// device over the simulator-backed driver (sm_90, every check on): each way of launching the
// step gives the reference interpreter's logits, records one graph and replays it as many times
// as the schedule says, and the empty-kernel graphs replay (their dependent launches keeping
// the simulator's PDL check). The times it logs are the simulator's, not a GPU's.
func TestDecodePDLHarnessSim(t *testing.T) {
	drv := simdriver.New()
	dev, err := cuda.Open(drv, 0, cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dev.Close(); err != nil {
			t.Error(err)
		}
	}()
	c := Config{Arch: "gpt2", Vocab: 96, Hidden: 32, Intermediate: 128, Layers: 2, Heads: 2, MaxSeq: 16, NormEps: 1e-5}
	rep := measureDecodePDL(t, dev, hashModel(t, c), []decodeLaunch{launch80, launch90NoPDL, launch90}, replaySchedule{warm: 1, steps: 2, trials: 1})
	if n := drv.GraphLaunches(); n != rep.graphLaunches {
		t.Errorf("%d graph launches, the measurement made %d", n, rep.graphLaunches)
	}
	for _, tm := range rep.timings {
		if want := tm.kernels * btoi(tm.launch.pdl); tm.pdl != want {
			t.Errorf("%s: %d of %d launches PDL, want %d", tm.launch, tm.pdl, tm.kernels, want)
		}
	}
	if rep.emptyPDLUS == 0 {
		t.Errorf("no graph of empty PDL kernels was timed on an sm_90 device")
	}
	t.Log("\n" + rep.table())
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
