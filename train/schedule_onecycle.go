package train

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
)

// NewOneCycle returns torch.optim.lr_scheduler.OneCycleLR over total updates with PyTorch's
// defaults: pct_start 0.3, anneal_strategy "cos", div_factor 25, final_div_factor 1e4,
// three_phase False, cycle_momentum True between 0.85 and 0.95. Its max_lr is the optimizer's
// learning rate.
func NewOneCycle(total int) *Schedule {
	return &Schedule{Kind: "onecycle", TotalSteps: total, PctStart: 0.3, DivFactor: 25, FinalDivFactor: 1e4,
		CycleMomentum: true, BaseMomentum: 0.85, MaxMomentum: 0.95}
}

// checkOneCycle rejects what OneCycleLR rejects or divides by zero on.
func (s *Schedule) checkOneCycle(maxSteps int) error {
	switch {
	case s.TotalSteps < 1 || s.TotalSteps > maxSteps:
		return fmt.Errorf("lr schedule onecycle: total_steps %d: want 1 to %d (the step count is f32)", s.TotalSteps, maxSteps)
	case !(s.PctStart >= 0 && s.PctStart <= 1):
		return fmt.Errorf("lr schedule onecycle: pct_start %v: want 0 to 1", s.PctStart)
	case s.phaseEnd() == 0:
		// PyTorch's first rate is then 0/0 (ZeroDivisionError).
		return fmt.Errorf("lr schedule onecycle: pct_start %v of %d steps ends the first phase at step 0", s.PctStart, s.TotalSteps)
	case !(s.DivFactor > 0 && s.DivFactor <= math.MaxFloat64), !(s.FinalDivFactor > 0 && s.FinalDivFactor <= math.MaxFloat64):
		return fmt.Errorf("lr schedule onecycle: div_factor %v, final_div_factor %v: want positive numbers", s.DivFactor, s.FinalDivFactor)
	case math.IsNaN(s.BaseMomentum) || math.IsInf(s.BaseMomentum, 0) || math.IsNaN(s.MaxMomentum) || math.IsInf(s.MaxMomentum, 0),
		s.CycleMomentum && !(s.BaseMomentum > 0 && s.BaseMomentum < 1 && s.MaxMomentum > 0 && s.MaxMomentum < 1):
		// Adam's beta1 must be below 1; a zero momentum would make PyTorch's SGD skip its
		// buffer for that step, which a cycled buffer does not.
		return fmt.Errorf("lr schedule onecycle: momentum from %v to %v: want both in (0, 1)", s.BaseMomentum, s.MaxMomentum)
	}
	return nil
}

// phaseEnd is the step (counted from 0) ending the rising phase, float(pct_start·total_steps)−1
// as PyTorch computes it.
func (s *Schedule) phaseEnd() float64 { return s.PctStart*float64(s.TotalSteps) - 1 }

// oneCycleRates are OneCycleLR's initial, maximal and last rates for max_lr base.
func (s *Schedule) oneCycleRates(base float64) (initial, peak, last float64) {
	initial = base / s.DivFactor
	return initial, base, initial / s.FinalDivFactor
}

// annealCos is OneCycleLR's _annealing_cos, in its order of operations.
func annealCos(start, end, pct float64) float64 {
	return end + (start-end)/2.0*(math.Cos(math.Pi*pct)+1)
}

// oneCycle is OneCycleLR's get_lr at step t (counted from 0): the rate and the momentum.
func (s *Schedule) oneCycle(base, t float64) (lr, momentum float64) {
	initial, peak, last := s.oneCycleRates(base)
	end1 := s.phaseEnd()
	if t <= end1 {
		pct := t / end1
		return annealCos(initial, peak, pct), annealCos(s.MaxMomentum, s.BaseMomentum, pct)
	}
	pct := (t - end1) / (float64(s.TotalSteps-1) - end1)
	return annealCos(peak, last, pct), annealCos(s.BaseMomentum, s.MaxMomentum, pct)
}

// emitOneCycle appends oneCycle's computation for t, an f64[] step counted from 0; momentum is
// nil without CycleMomentum.
func (s *Schedule) emitOneCycle(e *autodiff.Emitter, base float64, t *ir.Value) (lr, momentum *ir.Value) {
	f64 := ir.T(ir.F64)
	anneal := func(start, end float64, pct *ir.Value) *ir.Value {
		cos := e.AddScalar(e.Op("cos", nil, e.MulScalar(pct, math.Pi)), 1)
		return e.AddScalar(e.MulScalar(cos, (start-end)/2.0), end)
	}
	initial, peak, last := s.oneCycleRates(base)
	end1 := s.phaseEnd()
	rising := e.Op("le", nil, t, e.Const(end1, f64))
	pct1 := e.Div(t, e.Const(end1, f64))
	pct2 := e.Div(e.AddScalar(t, -end1), e.Const(float64(s.TotalSteps-1)-end1, f64))
	lr = e.Select(rising, anneal(initial, peak, pct1), anneal(peak, last, pct2))
	if s.CycleMomentum {
		momentum = e.Select(rising, anneal(s.MaxMomentum, s.BaseMomentum, pct1), anneal(s.BaseMomentum, s.MaxMomentum, pct2))
	}
	return lr, momentum
}

// Momentum is the momentum (SGD) or beta1 (Adam) of update k (1 first) under a schedule that
// cycles it, and false for one that does not.
func (s *Schedule) Momentum(k int) (float64, bool) {
	if s.Kind != "onecycle" || !s.CycleMomentum {
		return 0, false
	}
	_, m := s.oneCycle(1, float64(k-1))
	return m, true
}

// optimizer is the optimizer the schedule's steps update with: under a cycled momentum, opt with
// its momentum (SGD, which then keeps a momentum buffer even when opt had none) or beta1 (Adam)
// set to MaxMomentum, as OneCycleLR's constructor sets the optimizer's; the step's own value
// replaces it at every update.
func (s *Schedule) optimizer(opt Optimizer) Optimizer {
	if s == nil || s.Kind != "onecycle" || !s.CycleMomentum {
		return opt
	}
	switch o := opt.(type) {
	case *SGD:
		c := *o
		c.Momentum = s.MaxMomentum
		return &c
	case *Adam:
		c := *o
		c.Beta1 = s.MaxMomentum
		return &c
	}
	return opt
}

// checkRun refuses a run that would update past a one-cycle schedule's total steps, which
// OneCycleLR refuses to step into: last is the run's last step.
func (s *Schedule) checkRun(last int) error {
	if s == nil || s.Kind != "onecycle" || last <= s.TotalSteps {
		return nil
	}
	return fmt.Errorf("train: lr schedule onecycle of %d steps: this run would end at step %d (OneCycleLR does not step past total_steps)", s.TotalSteps, last)
}
