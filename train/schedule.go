package train

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
)

// MetaSchedule is the checkpoint metadata of the learning-rate schedule (Schedule.String), so
// that --resume continues it.
const MetaSchedule = "gcomp.lr_schedule"

// Schedules names the learning-rate schedules, by gcomp train's --lr-schedule names.
var Schedules = []string{"step", "cosine", "onecycle"}

// Schedule is a learning-rate scheduler of torch.optim.lr_scheduler, computed inside the step
// graph from the optimizer's step count ("opt.step"), so a checkpoint resumes it with no state of
// its own. The k-th update (k = 1, 2, …) uses the rate PyTorch's scheduler gives after k-1 calls
// of scheduler.step() in the order of a PyTorch loop:
//
//   - "step" is StepLR(step_size=StepSize, gamma=Gamma) stepped once an epoch of StepsPerEpoch
//     updates: lr = base·Gamma^⌊⌊(k-1)/StepsPerEpoch⌋/StepSize⌋;
//   - "cosine" is CosineAnnealingLR(T_max=TMax, eta_min=MinLR) stepped after every update:
//     lr = MinLR + (base-MinLR)·(1+cos(π·(k-1)/TMax))/2 (PyTorch's closed form; past TMax the
//     cosine rises again, as PyTorch's does);
//   - "onecycle" is OneCycleLR(max_lr=base, total_steps=TotalSteps, pct_start=PctStart,
//     anneal_strategy="cos", div_factor=DivFactor, final_div_factor=FinalDivFactor,
//     three_phase=False, cycle_momentum=CycleMomentum, base_momentum=BaseMomentum,
//     max_momentum=MaxMomentum) stepped after every update (NewOneCycle gives PyTorch's
//     defaults): with t = k-1 and e = PctStart·TotalSteps-1, the rate rises from base/DivFactor
//     to base along a half cosine while t ≤ e and falls to base/DivFactor/FinalDivFactor at t =
//     TotalSteps-1; the momentum (SGD's momentum, Adam's beta1) falls from MaxMomentum to
//     BaseMomentum and rises back over the same phases. Fit refuses to run past TotalSteps, as
//     OneCycleLR refuses to step past it.
//
// base is the optimizer's learning rate (--lr). A step that loss scaling skips does not advance
// the count (PyTorch's scheduler would still step).
type Schedule struct {
	Kind          string
	StepSize      int     // step: epochs between decays
	Gamma         float64 // step: the decay factor
	StepsPerEpoch int     // step: updates per epoch
	TMax          int     // cosine: updates of a half period
	MinLR         float64 // cosine: eta_min

	TotalSteps                int     // onecycle: updates of the cycle (total_steps)
	PctStart                  float64 // onecycle: the part of the cycle the rate rises (pct_start)
	DivFactor, FinalDivFactor float64 // onecycle: initial rate base/DivFactor, last initial/FinalDivFactor
	CycleMomentum             bool    // onecycle: cycle the momentum (cycle_momentum)
	BaseMomentum, MaxMomentum float64 // onecycle: the momentum's range (base_momentum, max_momentum)
}

// Check rejects what PyTorch's constructors reject, and sizes that do not fit the step count.
func (s *Schedule) Check() error {
	const maxSteps = 1 << 24 // the f32 step count counts exactly up to 2^24
	switch s.Kind {
	case "step":
		if s.StepSize < 1 || s.StepsPerEpoch < 1 || s.StepSize > maxSteps || s.StepsPerEpoch > maxSteps {
			return fmt.Errorf("lr schedule step: step size %d epochs of %d updates: want both from 1 to %d", s.StepSize, s.StepsPerEpoch, maxSteps)
		}
		if !(s.Gamma >= 0 && s.Gamma <= math.MaxFloat64) {
			return fmt.Errorf("lr schedule step: invalid gamma %v", s.Gamma)
		}
	case "cosine":
		if s.TMax < 1 || s.TMax > maxSteps {
			return fmt.Errorf("lr schedule cosine: T_max %d updates: want 1 to %d (the step count is f32)", s.TMax, maxSteps)
		}
		if !(s.MinLR >= 0 && s.MinLR <= math.MaxFloat64) {
			return fmt.Errorf("lr schedule cosine: invalid minimum rate %v", s.MinLR)
		}
	case "onecycle":
		return s.checkOneCycle(maxSteps)
	default:
		return fmt.Errorf("unknown lr schedule %q (want %s)", s.Kind, strings.Join(Schedules, ", "))
	}
	return nil
}

// LR is the learning rate of update k (1 first) for base rate base, in float64 as PyTorch's
// scheduler computes it.
func (s *Schedule) LR(base float64, k int) float64 {
	t := float64(k - 1)
	switch s.Kind {
	case "step":
		return base * math.Pow(s.Gamma, math.Floor(math.Floor(t/float64(s.StepsPerEpoch))/float64(s.StepSize)))
	case "cosine":
		return s.MinLR + (base-s.MinLR)*(1+math.Cos(math.Pi*t/float64(s.TMax)))/2
	case "onecycle":
		lr, _ := s.oneCycle(base, t)
		return lr
	}
	panic("train: unchecked schedule " + s.Kind)
}

// emit appends LR's computation, and Momentum's for a schedule that cycles it (else nil): step
// is the f32[] count of this update (k), the results f64[].
func (s *Schedule) emit(e *autodiff.Emitter, opt Optimizer, step *ir.Value) (lr, momentum *ir.Value) {
	base, ok := baseLR(opt)
	if !ok {
		e.Fail("a learning-rate schedule needs an sgd, adam or adamw optimizer, have %s", opt.Name())
	}
	f64 := ir.T(ir.F64)
	c := func(v float64) *ir.Value { return e.Const(v, f64) }
	t := e.AddScalar(e.Cast(step, ir.F64), -1)
	switch s.Kind {
	case "step":
		epoch := e.Op("floor", nil, e.Div(t, c(float64(s.StepsPerEpoch))))
		n := e.Op("floor", nil, e.Div(epoch, c(float64(s.StepSize))))
		return e.MulScalar(e.Op("pow", nil, c(s.Gamma), n), base), nil
	case "cosine":
		cos := e.Op("cos", nil, e.MulScalar(t, math.Pi/float64(s.TMax)))
		return e.AddScalar(e.MulScalar(e.AddScalar(cos, 1), (base-s.MinLR)/2), s.MinLR), nil
	case "onecycle":
		return s.emitOneCycle(e, base, t)
	}
	e.Fail("unchecked schedule %s", s.Kind)
	return nil, nil
}

// String is the schedule's checkpoint form, e.g. "cosine T_max=9375 eta_min=0"; ParseSchedule
// reads it back.
func (s *Schedule) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch s.Kind {
	case "step":
		return fmt.Sprintf("step step_size=%d gamma=%s steps_per_epoch=%d", s.StepSize, f(s.Gamma), s.StepsPerEpoch)
	case "cosine":
		return fmt.Sprintf("cosine T_max=%d eta_min=%s", s.TMax, f(s.MinLR))
	case "onecycle":
		return fmt.Sprintf("onecycle total_steps=%d pct_start=%s div_factor=%s final_div_factor=%s cycle_momentum=%t base_momentum=%s max_momentum=%s",
			s.TotalSteps, f(s.PctStart), f(s.DivFactor), f(s.FinalDivFactor), s.CycleMomentum, f(s.BaseMomentum), f(s.MaxMomentum))
	}
	return s.Kind
}

// ParseSchedule reads Schedule.String's form.
func ParseSchedule(text string) (*Schedule, error) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty lr schedule")
	}
	s := &Schedule{Kind: fields[0]}
	// The fields of the kind, by their names in the text.
	var ints map[string]*int
	var floats map[string]*float64
	var bools map[string]*bool
	switch s.Kind {
	case "step":
		ints = map[string]*int{"step_size": &s.StepSize, "steps_per_epoch": &s.StepsPerEpoch}
		floats = map[string]*float64{"gamma": &s.Gamma}
	case "cosine":
		ints = map[string]*int{"T_max": &s.TMax}
		floats = map[string]*float64{"eta_min": &s.MinLR}
	case "onecycle":
		ints = map[string]*int{"total_steps": &s.TotalSteps}
		floats = map[string]*float64{"pct_start": &s.PctStart, "div_factor": &s.DivFactor, "final_div_factor": &s.FinalDivFactor,
			"base_momentum": &s.BaseMomentum, "max_momentum": &s.MaxMomentum}
		bools = map[string]*bool{"cycle_momentum": &s.CycleMomentum}
	}
	seen := map[string]bool{}
	for _, kv := range fields[1:] {
		k, v, ok := strings.Cut(kv, "=")
		var err error
		switch {
		case !ok || seen[k]:
			return nil, fmt.Errorf("lr schedule %q: unexpected %q", text, kv)
		case ints[k] != nil:
			*ints[k], err = strconv.Atoi(v)
		case floats[k] != nil:
			*floats[k], err = strconv.ParseFloat(v, 64)
		case bools[k] != nil:
			*bools[k], err = strconv.ParseBool(v)
		default:
			return nil, fmt.Errorf("lr schedule %q: unexpected %q", text, kv)
		}
		if err != nil {
			return nil, fmt.Errorf("lr schedule %q: %s: %v", text, k, err)
		}
		seen[k] = true
	}
	if len(seen) < len(ints)+len(floats)+len(bools) {
		return nil, fmt.Errorf("lr schedule %q: incomplete", text)
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return s, nil
}

// baseLR is the optimizer's learning rate, the schedule's base; false for an optimizer this
// package does not know.
func baseLR(opt Optimizer) (float64, bool) {
	switch o := opt.(type) {
	case *SGD:
		return o.LR, true
	case *Adam:
		return o.LR, true
	}
	return 0, false
}

// scheduleName is the checkpoint metadata of s's schedule, "" for none.
func (s *StepGraph) scheduleName() string {
	if s.Schedule == nil {
		return ""
	}
	return s.Schedule.String()
}
