package artifact

import (
	"fmt"
	"math/big"
)

// VariantsVersion is the version of a plan with specializations (Plan.Variants): the program
// compiled again with its dims' upper bounds lowered, chosen per run by the run's sizes. A plan
// without them keeps version 3 or 4, so its bytes are what they were.
const VariantsVersion = 5

// MaxVariants bounds a plan's programs, its specializations and its own (validation compares
// them pairwise); a build that would make more refuses before compiling them.
const MaxVariants = 64

// Variant is one specialization of a plan with dims: the kernels, memory plan, scratch and error
// areas of the program compiled for the sizes in Ranges (one entry per dim of the plan, in its
// order). Inputs, parameters and outputs are the plan's: allocated at the plan's bounds, which
// hold every run. A run whose sizes lie in Ranges launches Kernels instead of the plan's own.
type Variant struct {
	Ranges []Dim `json:"ranges"`
	// Note says why the build chose the variant (an automatic choice's modeled times); informational.
	Note         string         `json:"note,omitempty"`
	ArenaBytes   int64          `json:"arena_bytes"`
	Buffers      []PlacedBuffer `json:"buffers"`
	ScratchBytes int64          `json:"scratch_bytes"`
	ErrorBytes   int64          `json:"error_bytes,omitempty"`
	Kernels      []Kernel       `json:"kernels"`
}

// VariantPlans returns the plan's programs, one per specialization and then the plan's own, each
// a plan without variants that runs the sizes of the same index in VariantRanges. Their arena,
// scratch and error sizes are the largest of any, so one allocation of each serves every run.
// A plan without variants is its only program.
func (p *Plan) VariantPlans() ([]*Plan, error) {
	if len(p.Variants) == 0 {
		return []*Plan{p}, nil
	}
	own := *p
	own.Variants, own.OwnRanges, own.Version = nil, nil, Version
	plans := make([]*Plan, 0, len(p.Variants)+1)
	for _, v := range p.Variants {
		q := own
		q.ArenaBytes, q.Buffers, q.ScratchBytes, q.ErrorBytes, q.Kernels = v.ArenaBytes, v.Buffers, v.ScratchBytes, v.ErrorBytes, v.Kernels
		plans = append(plans, &q)
	}
	plans = append(plans, &own)
	var arena, scratch, errs int64
	for i, q := range plans {
		if err := q.Validate(); err != nil {
			return nil, fmt.Errorf("variant %d (%s): %v", i, RangesString(p.VariantRanges()[i]), err)
		}
		arena, scratch, errs = max(arena, q.ArenaBytes), max(scratch, q.ScratchBytes), max(errs, q.ErrorBytes)
	}
	for _, q := range plans {
		q.ArenaBytes, q.ScratchBytes, q.ErrorBytes = arena, scratch, errs
	}
	return plans, nil
}

// VariantRanges lists the sizes each of VariantPlans runs: the variants' ranges, then the
// plan's own (its dims for a plan without variants).
func (p *Plan) VariantRanges() [][]Dim {
	if len(p.Variants) == 0 {
		return [][]Dim{p.Dims}
	}
	rs := make([][]Dim, 0, len(p.Variants)+1)
	for _, v := range p.Variants {
		rs = append(rs, v.Ranges)
	}
	return append(rs, p.OwnRanges)
}

// ChooseVariant returns the index in VariantPlans of the program that runs the sizes env (every
// dim of the plan bound in it): the one whose ranges hold them. The ranges cover the dims
// exactly once (validateVariants), so sizes within the dims find exactly one; others find -1.
func (p *Plan) ChooseVariant(env map[string]int64) int {
	for i, rs := range p.VariantRanges() {
		if inRanges(rs, env) {
			return i
		}
	}
	return -1
}

func inRanges(rs []Dim, env map[string]int64) bool {
	for _, r := range rs {
		n, ok := env[r.Name]
		if !ok || n < int64(r.Lo) || n > int64(r.Hi) {
			return false
		}
	}
	return true
}

// validateVariants checks a version 5 plan's specializations: each one's ranges name the plan's
// dims in order, each within its dim's range, no two variants (the plan's own ranges included)
// share a size, and together they hold every size of the dims, so each run finds one program.
// The programs themselves are checked by VariantPlans.
func (p *Plan) validateVariants() error {
	switch {
	case len(p.Variants) == 0 && p.OwnRanges == nil && p.Version != VariantsVersion:
		return nil
	case len(p.Variants) == 0 || p.Version != VariantsVersion:
		return fmt.Errorf("variants need plan version %d and at least one variant (version %d, %d variants)", VariantsVersion, p.Version, len(p.Variants))
	case len(p.Dims) == 0:
		return fmt.Errorf("variants need dims")
	case len(p.Variants) >= MaxVariants:
		return fmt.Errorf("%d variants: at most %d", len(p.Variants)+1, MaxVariants)
	}
	all := p.VariantRanges()
	total := big.NewInt(0)
	for i, rs := range all {
		if len(rs) != len(p.Dims) {
			return fmt.Errorf("variant %d has %d ranges for %d dims", i, len(rs), len(p.Dims))
		}
		vol := big.NewInt(1)
		for j, r := range rs {
			d := p.Dims[j]
			if r.Name != d.Name || r.Lo < d.Lo || r.Lo > r.Hi || r.Hi > d.Hi {
				return fmt.Errorf("variant %d: range %s in [%d,%d] is not within dim %s in [%d,%d]", i, r.Name, r.Lo, r.Hi, d.Name, d.Lo, d.Hi)
			}
			vol.Mul(vol, big.NewInt(int64(r.Hi-r.Lo+1)))
		}
		for j := range i {
			if overlap(all[j], rs) {
				return fmt.Errorf("variants %d (%s) and %d (%s) overlap", j, RangesString(all[j]), i, RangesString(rs))
			}
		}
		total.Add(total, vol)
	}
	want := big.NewInt(1)
	for _, d := range p.Dims {
		want.Mul(want, big.NewInt(int64(d.Hi-d.Lo+1)))
	}
	if total.Cmp(want) != 0 {
		return fmt.Errorf("the variants' ranges leave sizes of the dims uncovered")
	}
	return nil
}

// overlap reports whether two boxes of ranges (the same dims in the same order) share a size.
func overlap(a, b []Dim) bool {
	for i := range a {
		if a[i].Hi < b[i].Lo || b[i].Hi < a[i].Lo {
			return false
		}
	}
	return true
}

// RangesString prints a variant's ranges as "batch in [1,4], seq in [1,8]".
func RangesString(rs []Dim) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s in [%d,%d]", r.Name, r.Lo, r.Hi)
	}
	return s
}
