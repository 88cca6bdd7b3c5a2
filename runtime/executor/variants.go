package executor

import (
	"fmt"

	"github.com/gcomp/gcomp/artifact"
)

// Specializations (artifact.Variant): a plan with dims may carry the program compiled for
// smaller ranges beside the bound's. Each is a plan of its own (artifact.Plan.VariantPlans) over
// the same inputs, parameters and outputs, whose arena, scratch and error sizes are the largest
// any needs, so the program allocates once and every run uses the same memory. Each run binds
// its sizes and then runs the variant whose ranges hold them: p.plan is that variant's plan
// until a run at other sizes chooses another.
type variants struct {
	plans   []*artifact.Plan // by index: the plan's variants, then its own kernels
	current int
}

// loadVariants prepares a plan with specializations; p.plan becomes the plan's own program
// (the bound's), which allocation sizes for every variant.
func (p *Program) loadVariants() error {
	if len(p.plan.Variants) == 0 {
		return nil
	}
	plans, err := p.plan.VariantPlans()
	if err != nil {
		return fmt.Errorf("launch plan: %v", err)
	}
	p.vars = &variants{plans: plans, current: len(plans) - 1}
	p.plan = plans[len(plans)-1]
	return nil
}

// chooseVariant makes the run at the bound sizes use the variant whose ranges hold them. The
// arena holds the bind-time kernels' outputs only for the variant that ran them: switching to
// another runs its own again.
func (p *Program) chooseVariant() error {
	if p.vars == nil || p.sz == nil || p.sz.env == nil {
		return nil
	}
	i := p.art.Plan.ChooseVariant(p.sz.env)
	if i < 0 {
		return fmt.Errorf("internal error: no variant of the plan runs sizes %v", p.sz.env)
	}
	if i != p.vars.current {
		p.vars.current, p.plan = i, p.vars.plans[i]
		p.bind.current = false
	}
	return nil
}

// Variant returns the ranges of the specialization the last run used ("" for a plan without
// specializations), as "batch in [1,4]".
func (p *Program) Variant() string {
	if p.vars == nil {
		return ""
	}
	return artifact.RangesString(p.art.Plan.VariantRanges()[p.vars.current])
}

// variantKey tells recordings of different variants apart (graphs.go, graphsizes.go).
func (p *Program) variantKey() string {
	if p.vars == nil {
		return ""
	}
	return fmt.Sprintf("variant=%d", p.vars.current)
}
