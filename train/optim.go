package train

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
)

// Optimizer builds the graph nodes of one parameter update, with PyTorch's formulas.
type Optimizer interface {
	// Name is "sgd", "adam" or "adamw".
	Name() string
	// Slots names the per-parameter state tensors, each shaped like its parameter and zero at
	// the start (PyTorch's state_dict names: "momentum_buffer", "exp_avg", "exp_avg_sq").
	Slots() []string
	// Counts reports whether the update needs the step count (1 at the first step).
	Counts() bool
	// Check rejects invalid hyper-parameters, as PyTorch's constructors do.
	Check() error
	// Update appends the update of one parameter and returns its new value and new slots.
	Update(e *autodiff.Emitter, u Update) (param *ir.Value, slots []*ir.Value)
}

// Update is what an optimizer receives for one parameter.
type Update struct {
	Param, Grad *ir.Value
	Slots       []*ir.Value // in the order of Slots()
	Step        *ir.Value   // f32[] step count after this step (1 first), if Counts()
	LR          *ir.Value   // f64[] this step's learning rate under a Schedule; nil: the optimizer's own
	// Momentum is this step's momentum (SGD) or beta1 (Adam), f64[], under a Schedule that
	// cycles it; nil: the optimizer's own.
	Momentum *ir.Value
}

// scalarOf is a per-step f64[] scalar as a tensor of like's type, for elementwise use.
func scalarOf(e *autodiff.Emitter, v, like *ir.Value) *ir.Value {
	return e.BroadcastScalarTo(e.Cast(v, like.Type.DType), like.Type)
}

// SGD is torch.optim.SGD. NewSGD gives PyTorch's defaults.
type SGD struct {
	LR, Momentum, Dampening, WeightDecay float64
	Nesterov                             bool
}

// NewSGD returns SGD with learning rate lr and PyTorch's defaults: no momentum, dampening or
// weight decay.
func NewSGD(lr float64) *SGD { return &SGD{LR: lr} }

func (o *SGD) Name() string { return "sgd" }

func (o *SGD) Slots() []string {
	if o.Momentum != 0 {
		return []string{"momentum_buffer"}
	}
	return nil
}

// Counts: only dampening needs to know the first step (PyTorch starts the buffer at the
// undamped gradient); without it the zero buffer gives the same first step.
func (o *SGD) Counts() bool { return o.Momentum != 0 && o.Dampening != 0 }

func (o *SGD) Check() error {
	switch {
	case !(o.LR >= 0):
		return fmt.Errorf("sgd: invalid learning rate %v", o.LR)
	case !(o.Momentum >= 0):
		return fmt.Errorf("sgd: invalid momentum %v", o.Momentum)
	case !(o.WeightDecay >= 0):
		return fmt.Errorf("sgd: invalid weight decay %v", o.WeightDecay)
	case o.Nesterov && (o.Momentum <= 0 || o.Dampening != 0):
		return fmt.Errorf("sgd: nesterov momentum requires a momentum and zero dampening")
	}
	return nil
}

// Update:
//
//	d = g + weight_decay·p
//	buf = d at the first step, else momentum·buf + (1-dampening)·d
//	d = d + momentum·buf (nesterov) or buf
//	p = p - lr·d
func (o *SGD) Update(e *autodiff.Emitter, u Update) (*ir.Value, []*ir.Value) {
	p, d := u.Param, u.Grad
	if o.WeightDecay != 0 {
		d = e.Add(d, e.MulScalar(p, o.WeightDecay))
	}
	var slots []*ir.Value
	if o.Momentum != 0 {
		momentum := func(v *ir.Value) *ir.Value {
			if u.Momentum != nil {
				return e.Mul(v, scalarOf(e, u.Momentum, v))
			}
			return e.MulScalar(v, o.Momentum)
		}
		buf := momentum(u.Slots[0])
		if o.Dampening != 0 {
			buf = e.Add(buf, e.MulScalar(d, 1-o.Dampening))
			first := e.Op("eq", nil, u.Step, e.Const(1, u.Step.Type))
			buf = e.Select(e.BroadcastScalarTo(first, p.Type), d, buf)
		} else {
			buf = e.Add(buf, d)
		}
		slots = []*ir.Value{buf}
		if o.Nesterov {
			d = e.Add(d, momentum(buf))
		} else {
			d = buf
		}
	}
	if u.LR != nil {
		return e.Add(p, e.Mul(d, scalarOf(e, e.Neg(u.LR), d))), slots
	}
	return e.Add(p, e.MulScalar(d, -o.LR)), slots
}

// Adam is torch.optim.Adam, or torch.optim.AdamW when Decoupled. NewAdam and NewAdamW give
// PyTorch's defaults.
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	Decoupled                          bool // AdamW: decay the parameter, not the gradient
}

// NewAdam returns Adam with PyTorch's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, no
// weight decay.
func NewAdam() *Adam { return &Adam{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

// NewAdamW returns AdamW with PyTorch's defaults: Adam's, and weight decay 1e-2.
func NewAdamW() *Adam {
	o := NewAdam()
	o.WeightDecay, o.Decoupled = 1e-2, true
	return o
}

func (o *Adam) Name() string {
	if o.Decoupled {
		return "adamw"
	}
	return "adam"
}

func (o *Adam) Slots() []string { return []string{"exp_avg", "exp_avg_sq"} }

func (o *Adam) Counts() bool { return true }

func (o *Adam) Check() error {
	switch {
	case !(o.LR >= 0):
		return fmt.Errorf("%s: invalid learning rate %v", o.Name(), o.LR)
	case !(o.Eps >= 0):
		return fmt.Errorf("%s: invalid epsilon %v", o.Name(), o.Eps)
	case !(o.Beta1 >= 0 && o.Beta1 < 1), !(o.Beta2 >= 0 && o.Beta2 < 1):
		return fmt.Errorf("%s: invalid betas (%v, %v)", o.Name(), o.Beta1, o.Beta2)
	case !(o.WeightDecay >= 0):
		return fmt.Errorf("%s: invalid weight decay %v", o.Name(), o.WeightDecay)
	}
	return nil
}

// Update, with t the step count (PyTorch's _single_tensor_adam / _single_tensor_adamw):
//
//	g = g + weight_decay·p             (Adam)      p = p·(1 - lr·weight_decay)   (AdamW)
//	m = β1·m + (1-β1)·g
//	v = β2·v + (1-β2)·g²
//	p = p - (lr/(1-β1^t))·m / (√v/√(1-β2^t) + eps)
//
// The bias corrections are computed in f64 from the step count and rounded once to the
// parameter's dtype, as PyTorch computes them in Python floats. Under a schedule that cycles β1
// (Update.Momentum), both m's update and 1-β1^t use this step's β1, as PyTorch's Adam reads
// betas[0] afresh at every step.
func (o *Adam) Update(e *autodiff.Emitter, u Update) (*ir.Value, []*ir.Value) {
	p, g := u.Param, u.Grad
	dt, pt := p.Type.DType, p.Type
	if o.WeightDecay != 0 {
		if o.Decoupled && u.LR != nil {
			decay := e.AddScalar(e.MulScalar(u.LR, -o.WeightDecay), 1)
			p = e.Mul(p, e.BroadcastScalarTo(e.Cast(decay, dt), pt))
		} else if o.Decoupled {
			p = e.MulScalar(p, 1-o.LR*o.WeightDecay)
		} else {
			g = e.Add(g, e.MulScalar(p, o.WeightDecay))
		}
	}
	var m *ir.Value
	if u.Momentum != nil {
		// 1-beta1 in f64, rounded once, as PyTorch's Python float is.
		oneMinus := e.Sub(e.Const(1, u.Momentum.Type), u.Momentum)
		m = e.Add(e.Mul(u.Slots[0], scalarOf(e, u.Momentum, g)), e.Mul(g, scalarOf(e, oneMinus, g)))
	} else {
		m = e.Add(e.MulScalar(u.Slots[0], o.Beta1), e.MulScalar(g, 1-o.Beta1))
	}
	v := e.Add(e.MulScalar(u.Slots[1], o.Beta2), e.Mul(e.MulScalar(g, 1-o.Beta2), g))
	t := e.Cast(u.Step, ir.F64)
	f64 := ir.T(ir.F64)
	beta1 := func() *ir.Value {
		if u.Momentum != nil {
			return u.Momentum
		}
		return e.Const(o.Beta1, f64)
	}
	bc1 := e.Sub(e.Const(1, f64), e.Op("pow", nil, beta1(), t))
	bc2 := e.Sub(e.Const(1, f64), e.Op("pow", nil, e.Const(o.Beta2, f64), t))
	negLR := e.Const(-o.LR, f64)
	if u.LR != nil {
		negLR = e.Neg(u.LR)
	}
	negStep := e.BroadcastScalarTo(e.Cast(e.Div(negLR, bc1), dt), pt)
	bc2sqrt := e.BroadcastScalarTo(e.Cast(e.Op("sqrt", nil, bc2), dt), pt)
	denom := e.AddScalar(e.Div(e.Op("sqrt", nil, v), bc2sqrt), o.Eps)
	p = e.Add(p, e.Div(e.Mul(negStep, m), denom))
	return p, []*ir.Value{m, v}
}

// ParseOptimizer returns the optimizer named sgd, adam or adamw with learning rate lr (0: the
// default, which SGD does not have) and PyTorch's other defaults.
func ParseOptimizer(name string, lr float64) (Optimizer, error) {
	var o Optimizer
	switch name {
	case "sgd":
		if lr == 0 {
			return nil, fmt.Errorf("sgd needs a learning rate")
		}
		o = NewSGD(lr)
	case "adam", "adamw":
		a := NewAdam()
		if name == "adamw" {
			a = NewAdamW()
		}
		if lr != 0 {
			a.LR = lr
		}
		o = a
	default:
		return nil, fmt.Errorf("unknown optimizer %q (want sgd, adam or adamw)", name)
	}
	if math.IsNaN(lr) {
		return nil, fmt.Errorf("%s: invalid learning rate %v", name, lr)
	}
	return o, o.Check()
}
