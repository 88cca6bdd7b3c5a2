package nvvm

import (
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
)

// A nearest upsampling keeps an element group's vector access, as codegen/ptx's repeatGroup:
// a reshape merging the last two axes of a broadcast that repeats each element r times along a
// new last axis (y[..., w·r + k] = x[..., w]), where r divides the group's n lanes, reads
// element j/r of a group of n/r consecutive operand elements at lane j. That operand group's
// lanes are built from its lead (lin = the lead's + j, the lead's lin marked aligned to n/r
// elements), so libNVVM merges the distinct loads into one vector load, and lanes reading the
// same element share one index, hence one evaluation. Views below the upsampling carry the
// group on where its lanes stay consecutive in their operand's rows; everywhere else each lane
// is computed on its own, as before.

// laneGroup places an index at lane j of a group of n consecutive elements of one row (along
// the last axis), led by lead (lane 0). own: the lanes' coordinates and lin derive from the
// lead's (index.go), and the lead's lin is aligned to n elements. Otherwise the group is a note
// on indices computed independently (the output's element groups).
type laneGroup struct {
	lead  *index
	j, n  int
	own   bool
	lanes []*index // an own group's lanes, on its lead's laneGroup
}

// groupKey names an index derived from a group's lead: through view v (i < 0: the upsampling
// recognized at v, 0: v's operand) or concat v's operand i.
type groupKey struct {
	v    *irg.Value
	i    int
	lead *index
}

// ownGroup makes x the lead of an own group of n lanes (n > 1).
func (kg *kgen) ownGroup(x *index, n int) {
	x.grp = &laneGroup{lead: x, n: n, own: true}
	x.grp.lanes = []*index{x}
	for j := 1; j < n; j++ {
		l := &index{shape: x.shape, coord: make([]value.Value, len(x.shape)), grp: &laneGroup{lead: x, j: j, n: n, own: true}}
		x.grp.lanes = append(x.grp.lanes, l)
	}
	if x.lin != nil {
		kg.aligned[x.lin] = n
	}
}

// repeatLane recognizes the nearest upsampling at view v for lane x of a group: src is the
// upsampled value and sub the index of src lane x reads. src is nil where the pattern does not
// hold (x in no group, r not dividing n, operand rows not a multiple of n/r).
func (kg *kgen) repeatLane(v *irg.Value, x *index) (src *irg.Value, sub *index) {
	g := x.grp
	if g == nil {
		return nil, nil
	}
	src, r := plan.NearestRepeat(v)
	if src == nil {
		return nil, nil
	}
	os := src.Type.Shape
	k := len(os) + 1
	n := g.n
	if n%r != 0 || os[k-2]%(n/r) != 0 {
		return nil, nil
	}
	key := groupKey{v, -1, g.lead}
	sub, done := kg.groups[key]
	if !done {
		// The lead's last coordinate is a multiple of n, so sub's is one of n/r: with rows of a
		// multiple of n/r elements, sub's lin is too.
		c := make([]value.Value, k-1)
		for i := range c[:k-2] {
			c[i] = kg.coord(g.lead, i)
		}
		c[k-2] = kg.div(kg.coord(g.lead, k-2), r)
		sub = newIndexCoords(os, c)
		if n > r {
			kg.ownGroup(sub, n/r)
		}
		kg.groups[key] = sub
	}
	if sub.grp == nil {
		return src, sub // r = n: every lane reads one element
	}
	return src, sub.grp.lanes[g.j/r]
}

// viewLane is the index of view v's operand that lane x of an own group reads, as a lane of an
// own operand group (or, where every lane reads one element, that element's index); nil where
// x is in no own group or its lanes do not stay consecutive in the operand's rows.
func (kg *kgen) viewLane(v *irg.Value, x *index) *index {
	g := x.grp
	if g == nil || !g.own {
		return nil
	}
	key := groupKey{v, 0, g.lead}
	op, done := kg.groups[key]
	if !done {
		op = kg.viewGroup(v, g.lead, g.n)
		kg.groups[key] = op
	}
	if op == nil || op.grp == nil {
		return op
	}
	return op.grp.lanes[g.j]
}

// viewGroup maps the own group led by lead through view v, as codegen/ptx's operandGroup: an own
// operand group where the lanes stay consecutive in the operand's rows, an index without a group
// where they all read one element, nil where neither.
func (kg *kgen) viewGroup(v *irg.Value, lead *index, n int) *index {
	op := v.Args[0]
	os, rs := op.Type.Shape, v.Type.Shape
	if len(rs) == 0 || len(os) == 0 {
		return nil
	}
	last, olast := len(rs)-1, len(os)-1
	var x *index
	grouped := false
	switch v.Op {
	case "broadcast_in_dim":
		c := make([]value.Value, len(os))
		for i, d := range v.Attrs.Ints("dims") {
			if os[i] == 1 {
				c[i] = ci(0)
				continue
			}
			if d == last {
				if i != olast {
					return nil
				}
				grouped = true
			}
			c[i] = kg.coord(lead, d)
		}
		x = newIndexCoords(os, c)
	case "transpose":
		perm := v.Attrs.Ints("perm")
		if perm[last] != olast {
			return nil
		}
		c := make([]value.Value, len(os))
		for i, p := range perm {
			c[p] = kg.coord(lead, i)
		}
		x, grouped = newIndexCoords(os, c), true
	case "slice":
		start, stride := v.Attrs.Ints("start"), v.Attrs.Ints("stride")
		if (stride != nil && stride[last] != 1) || start[last]%n != 0 || os[olast]%n != 0 {
			return nil
		}
		c := make([]value.Value, len(os))
		for i := range c {
			s := 1
			if stride != nil {
				s = stride[i]
			}
			c[i] = kg.add(kg.mul(kg.coord(lead, i), s), ci(start[i]))
		}
		x, grouped = newIndexCoords(os, c), true
	case "reshape":
		if os[olast]%n != 0 {
			return nil
		}
		x, grouped = newIndexLin(os, kg.lin(lead)), true
	default:
		return nil
	}
	if grouped {
		kg.ownGroup(x, n)
	}
	return x
}

// concatLane is concat v's operand i's index oc (of shape os) for lane x of a group, as a lane
// of an own operand group: along an axis other than the last, the lanes keep their row in every
// operand, and a row there is as long as the output's. oc is returned where x is in no group.
func (kg *kgen) concatLane(v *irg.Value, i int, x *index, os irg.Shape, oc []value.Value) *index {
	g := x.grp
	if g == nil || v.Attrs.Int("axis", 0) == v.Type.Shape.Rank()-1 {
		return newIndexCoords(os, oc)
	}
	key := groupKey{v, i, g.lead}
	lead, done := kg.groups[key]
	if !done {
		if g.lead != x {
			return newIndexCoords(os, oc) // the lead took another path: no group to join
		}
		lead = newIndexCoords(os, oc)
		kg.ownGroup(lead, g.n)
		kg.groups[key] = lead
	}
	return lead.grp.lanes[g.j]
}
