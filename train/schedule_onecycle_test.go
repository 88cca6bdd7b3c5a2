package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// torchOneCycle is testdata/torch_onecycle.json, which scripts/torch_onecycle_reference.py
// writes with PyTorch's OneCycleLR.
type torchOneCycle struct {
	Rates []struct {
		Optimizer  torchOptimizer `json:"optimizer"`
		TotalSteps int            `json:"total_steps"`
		Schedule   struct {
			PctStart       float64 `json:"pct_start"`
			DivFactor      float64 `json:"div_factor"`
			FinalDivFactor float64 `json:"final_div_factor"`
			CycleMomentum  bool    `json:"cycle_momentum"`
			BaseMomentum   float64 `json:"base_momentum"`
			MaxMomentum    float64 `json:"max_momentum"`
		} `json:"schedule"`
		LR       []float64 `json:"lr"`
		Momentum []float64 `json:"momentum"`
	} `json:"rates"`
	Trajectories []struct {
		Optimizer  torchOptimizer `json:"optimizer"`
		TotalSteps int            `json:"total_steps"`
		W          [][3]float64   `json:"w"`
	} `json:"trajectories"`
}

// torchOptimizer is a torch.optim constructor's name and arguments.
type torchOptimizer struct {
	Name                                 string
	LR, Momentum, Dampening, WeightDecay float64
	WeightDecaySet                       bool
	Nesterov                             bool
}

func (o *torchOptimizer) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	f := func(k string) float64 { v, _ := m[k].(float64); return v }
	o.Name, _ = m["name"].(string)
	o.LR, o.Momentum, o.Dampening, o.WeightDecay = f("lr"), f("momentum"), f("dampening"), f("weight_decay")
	_, o.WeightDecaySet = m["weight_decay"]
	o.Nesterov, _ = m["nesterov"].(bool)
	return nil
}

// build is the optimizer as this package's, with PyTorch's defaults for what o leaves out.
func (o torchOptimizer) build(t *testing.T) Optimizer {
	t.Helper()
	opt, err := ParseOptimizer(o.Name, o.LR)
	if err != nil {
		t.Fatal(err)
	}
	switch opt := opt.(type) {
	case *SGD:
		opt.Momentum, opt.Dampening, opt.WeightDecay, opt.Nesterov = o.Momentum, o.Dampening, o.WeightDecay, o.Nesterov
	case *Adam:
		if o.WeightDecaySet {
			opt.WeightDecay = o.WeightDecay
		}
	}
	return opt
}

func readTorchOneCycle(t *testing.T) *torchOneCycle {
	t.Helper()
	raw, err := os.ReadFile("testdata/torch_onecycle.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref torchOneCycle
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Rates) == 0 || len(ref.Trajectories) == 0 {
		t.Fatal("testdata/torch_onecycle.json holds no cases")
	}
	return &ref
}

// closeTo: within a few rounding errors of PyTorch's float64 (its cos is the C library's).
func closeTo(got, want float64) bool { return math.Abs(got-want) <= 1e-13*math.Abs(want) }

// TestScheduleOneCycleRates compares the rates and momenta of one-cycle schedules, as
// Schedule.LR and Schedule.Momentum compute them and as the step graph's own nodes do on the
// reference interpreter, with those PyTorch's OneCycleLR gives before each update: PyTorch's
// defaults and others, 1 to 100 steps, pct_start 0 and 1, cycle_momentum off.
func TestScheduleOneCycleRates(t *testing.T) {
	for _, c := range readTorchOneCycle(t).Rates {
		sc := c.Schedule
		s := &Schedule{Kind: "onecycle", TotalSteps: c.TotalSteps, PctStart: sc.PctStart, DivFactor: sc.DivFactor, FinalDivFactor: sc.FinalDivFactor,
			CycleMomentum: sc.CycleMomentum, BaseMomentum: sc.BaseMomentum, MaxMomentum: sc.MaxMomentum}
		t.Run(fmt.Sprintf("%s/lr=%v/%s", c.Optimizer.Name, c.Optimizer.LR, s), func(t *testing.T) {
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			opt := c.Optimizer.build(t)
			g := ir.NewGraph("onecycle")
			k := g.Input("k", ir.T(ir.F32), nil)
			err := autodiff.Emit(g, func(e *autodiff.Emitter) {
				lr, m := s.emit(e, opt, k)
				g.SetOutput("lr", lr)
				if m != nil {
					g.SetOutput("momentum", m)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range c.LR {
				step := i + 1
				kt := tensor.New(ir.T(ir.F32))
				kt.F[0] = float64(step)
				out, err := ref.Run(g, map[string]*tensor.Tensor{"k": kt}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := s.LR(c.Optimizer.LR, step); !closeTo(got, want) {
					t.Errorf("update %d: LR %.17g, PyTorch %.17g", step, got, want)
				}
				if got := out["lr"].F[0]; !closeTo(got, want) {
					t.Errorf("update %d: the graph's rate %.17g, PyTorch %.17g", step, got, want)
				}
				m, cycled := s.Momentum(step)
				if cycled != sc.CycleMomentum || (out["momentum"] != nil) != cycled {
					t.Fatalf("update %d: Momentum cycled %v, the graph's momentum %v; cycle_momentum %v", step, cycled, out["momentum"], sc.CycleMomentum)
				}
				if !cycled {
					continue
				}
				if wantM := c.Momentum[i]; !closeTo(m, wantM) || !closeTo(out["momentum"].F[0], wantM) {
					t.Errorf("update %d: momentum %.17g, the graph's %.17g, PyTorch %.17g", step, m, out["momentum"].F[0], wantM)
				}
			}
		})
	}
}

// TestScheduleOneCycleTrajectories: SGD (without momentum, which the cycle gives it; with
// nesterov momentum; with dampening and weight decay), Adam and AdamW under OneCycleLR with
// PyTorch's defaults update a parameter as PyTorch's do, the optimizer's momentum or beta1
// replaced by the cycled one at every update.
func TestScheduleOneCycleTrajectories(t *testing.T) {
	for _, c := range readTorchOneCycle(t).Trajectories {
		t.Run(fmt.Sprintf("%+v", c.Optimizer), func(t *testing.T) {
			checkTinyTrajectory(t, c.Optimizer.build(t), NewOneCycle(c.TotalSteps), c.W)
		})
	}
}

// Under a cycled momentum the step's optimizer is the given one with its momentum or beta1 at
// max_momentum, as OneCycleLR's constructor sets it; the given one is left alone.
func TestScheduleOneCycleOptimizer(t *testing.T) {
	sgd, adam := NewSGD(0.1), NewAdamW()
	for _, tc := range []struct {
		opt   Optimizer
		sched *Schedule
		want  string
	}{
		{sgd, NewOneCycle(10), "&{LR:0.1 Momentum:0.95 Dampening:0 WeightDecay:0 Nesterov:false}"},
		{adam, NewOneCycle(10), "&{LR:0.001 Beta1:0.95 Beta2:0.999 Eps:1e-08 WeightDecay:0.01 Decoupled:true}"},
		{sgd, &Schedule{Kind: "onecycle", TotalSteps: 10, PctStart: 0.3, DivFactor: 25, FinalDivFactor: 1e4}, "&{LR:0.1 Momentum:0 Dampening:0 WeightDecay:0 Nesterov:false}"},
		{adam, &Schedule{Kind: "cosine", TMax: 10}, "&{LR:0.001 Beta1:0.9 Beta2:0.999 Eps:1e-08 WeightDecay:0.01 Decoupled:true}"},
	} {
		s, err := Step("tiny", tinyLinear, tc.opt, Options{Schedule: tc.sched})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%+v", s.Optimizer); got != tc.want {
			t.Errorf("%s, %s: the step's optimizer %s, want %s", tc.opt.Name(), tc.sched, got, tc.want)
		}
	}
	if sgd.Momentum != 0 || adam.Beta1 != 0.9 {
		t.Errorf("the given optimizers changed: %+v, %+v", sgd, adam)
	}
}

func TestScheduleOneCycleCheck(t *testing.T) {
	for _, s := range []*Schedule{NewOneCycle(100), {Kind: "onecycle", TotalSteps: 7, PctStart: 0.25, DivFactor: 10, FinalDivFactor: 100}} {
		got, err := ParseSchedule(s.String())
		if err != nil || *got != *s {
			t.Errorf("ParseSchedule(%q) = %+v, %v", s.String(), got, err)
		}
	}
	if got, want := NewOneCycle(9375).String(), "onecycle total_steps=9375 pct_start=0.3 div_factor=25 final_div_factor=10000 cycle_momentum=true base_momentum=0.85 max_momentum=0.95"; got != want {
		t.Errorf("String %q, want %q", got, want)
	}
	mod := func(f func(*Schedule)) *Schedule { s := NewOneCycle(10); f(s); return s }
	for _, tc := range []struct {
		s    *Schedule
		want string
	}{
		{NewOneCycle(0), "total_steps 0"},
		{NewOneCycle(1<<24 + 1), "want 1 to 16777216"},
		{mod(func(s *Schedule) { s.PctStart = 1.5 }), "pct_start 1.5"},
		{mod(func(s *Schedule) { s.PctStart = math.NaN() }), "pct_start NaN"},
		{mod(func(s *Schedule) { s.PctStart, s.TotalSteps = 0.5, 2 }), "ends the first phase at step 0"},
		{mod(func(s *Schedule) { s.DivFactor = 0 }), "div_factor 0"},
		{mod(func(s *Schedule) { s.FinalDivFactor = math.Inf(1) }), "final_div_factor +Inf"},
		{mod(func(s *Schedule) { s.MaxMomentum = 1 }), "momentum from 0.85 to 1"},
		{mod(func(s *Schedule) { s.BaseMomentum = 0 }), "momentum from 0 to 0.95"},
		{mod(func(s *Schedule) { s.CycleMomentum, s.BaseMomentum = false, math.NaN() }), "momentum from NaN to 0.95"},
	} {
		if err := tc.s.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check: %v, want %q", tc.s, err, tc.want)
		}
	}
	if err := mod(func(s *Schedule) { s.CycleMomentum, s.MaxMomentum = false, 1 }).Check(); err != nil {
		t.Errorf("the momenta of a schedule that does not cycle them: %v", err)
	}
}

// Fit refuses a run that would update past a one-cycle schedule's total steps, on one device
// or several, from the start or resumed, before it trains; the run that ends on the last step
// trains.
func TestFitScheduleOneCycleLength(t *testing.T) {
	d := mixtureRows(t, 64) // 4 steps of 16
	m := buildModel(t, mixtureAt(16), Loss{Name: CrossEntropyLoss})
	m2 := buildModel(t, mixtureAt(8), Loss{Name: CrossEntropyLoss})
	const want = "lr schedule onecycle of 7 steps: this run would end at step 8"
	if _, err := Fit(m, FitOptions{Optimizer: adam01(), Schedule: NewOneCycle(7), Train: d, Epochs: 2}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("one device: %v, want %q", err, want)
	}
	if _, err := Fit(m2, FitOptions{Optimizer: adam01(), Schedule: NewOneCycle(7), Train: d, Epochs: 2, Parallel: &Parallel{Devices: refDevices(2)}}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("two ranks: %v, want %q", err, want)
	}
	path := filepath.Join(t.TempDir(), "c.safetensors")
	if _, err := Fit(m, FitOptions{Optimizer: adam01(), Schedule: NewOneCycle(7), Train: d, Epochs: 1, Save: path}); err != nil {
		t.Fatal(err)
	}
	step, err := m.Step(adam01(), Options{Schedule: NewOneCycle(7)})
	if err != nil {
		t.Fatal(err)
	}
	from, err := step.Resume(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Fit(m, FitOptions{Step: step, Train: d, Epochs: 1, Resume: from}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("resumed: %v, want %q", err, want)
	}
	if _, err := Fit(m, FitOptions{Optimizer: adam01(), Schedule: NewOneCycle(8), Train: d, Epochs: 2}); err != nil {
		t.Errorf("8 steps of a schedule of 8: %v", err)
	}
}
