package ptx

import (
	"strconv"

	"github.com/gcomp/gcomp/ir"
)

// index is the position of one element in a value's shape, as u32 registers or immediates. Either
// form is derived from the other on demand, once: movement ops produce new indexes by arithmetic
// on coordinates, inputs need the linear form. Element counts are checked to fit 31 bits.
type index struct {
	shape ir.Shape
	coord []string // "" where not derived yet
	lin   string
	// A lane of a vectorized element group: coordinates are parent's, plus off in the last one.
	parent *index
	off    int
	// Group membership: leader is lane 0 of the group of consecutive elements x belongs to (nil
	// if none), lanes the group's members (set on the leader). A group's elements are
	// consecutive in memory order and its first is a multiple of the group size, so an input
	// read at a group loads with one vector access.
	leader *index
	lanes  []*index
}

// newGroup makes x the leader of a group of v consecutive elements. With flat, lanes are
// linear positions only (a group may straddle rows); otherwise they share all coordinates but
// the last.
func newGroup(a ia, x *index, v int, flat bool) {
	x.leader = x
	x.lanes = make([]*index, v)
	x.lanes[0] = x
	for j := 1; j < v; j++ {
		var l *index
		if flat {
			l = newIndexLin(x.shape, a.add(x.getLin(a), imm(j)))
		} else {
			l = &index{shape: x.shape, coord: make([]string, len(x.shape)), parent: x, off: j}
		}
		l.leader = x
		x.lanes[j] = l
	}
}

// laneOf is x's position in its group.
func (x *index) laneOf() int {
	for j, l := range x.leader.lanes {
		if l == x {
			return j
		}
	}
	return -1
}

func newIndexLin(shape ir.Shape, lin string) *index {
	return &index{shape: shape, coord: make([]string, len(shape)), lin: lin}
}

func newIndexCoords(shape ir.Shape, coord []string) *index {
	return &index{shape: shape, coord: coord}
}

// ia is integer index arithmetic with constant folding, so static parts cost nothing.
type ia struct{ b *builder }

func (a ia) num(s string) (int, bool) {
	if !isImm(s) {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func (a ia) add(x, y string) string {
	nx, okx := a.num(x)
	ny, oky := a.num(y)
	switch {
	case okx && oky:
		return imm(nx + ny)
	case okx && nx == 0:
		return y
	case oky && ny == 0:
		return x
	case okx:
		x, y = y, x
	}
	r := a.b.reg(rU32)
	a.b.ins("add.s32", r, x, y)
	a.def(r, "add", x, y)
	return r
}

// def records that index register r is op of x and y.
func (a ia) def(r, op, x, y string) {
	if a.b.defs == nil {
		a.b.defs = map[string]string{}
	}
	a.b.defs[r] = "(" + op + " " + a.canon(x) + " " + a.canon(y) + ")"
}

// canon is s as the arithmetic ia computed it from other registers and immediates.
func (a ia) canon(s string) string {
	if d, ok := a.b.defs[s]; ok {
		return d
	}
	return s
}

// same reports whether x and y are known to hold the same coordinate: the same register or
// immediate, or the same arithmetic of such (false: not known).
func (a ia) same(x, y string) bool { return a.canon(x) == a.canon(y) }

// sameIndex reports whether x and y are known to be the same element.
func sameIndex(a ia, x, y *index) bool {
	if !x.shape.Equal(y.shape) {
		return false
	}
	for d := range x.shape {
		if !a.same(x.getCoord(a, d), y.getCoord(a, d)) {
			return false
		}
	}
	return true
}

func (a ia) sub(x, y string) string {
	if ny, ok := a.num(y); ok {
		return a.add(x, imm(-ny))
	}
	if nx, ok := a.num(x); ok {
		r := a.b.reg(rU32)
		a.b.ins("sub.s32", r, a.mov(imm(nx)), y)
		return r
	}
	r := a.b.reg(rU32)
	a.b.ins("sub.s32", r, x, y)
	return r
}

// reg returns s as a register, moving an immediate into one.
func (a ia) reg(s string) string {
	if !isImm(s) {
		return s
	}
	return a.mov(s)
}

func (a ia) mov(s string) string {
	r := a.b.reg(rU32)
	a.b.ins("mov.u32", r, s)
	return r
}

func (a ia) mul(x string, c int) string {
	if n, ok := a.num(x); ok {
		return imm(n * c)
	}
	switch c {
	case 0:
		return "0"
	case 1:
		return x
	}
	r := a.b.reg(rU32)
	a.b.ins("mul.lo.s32", r, x, imm(c))
	a.def(r, "mul", x, imm(c))
	return r
}

// mad returns x*c + y.
func (a ia) mad(x string, c int, y string) string {
	if _, ok := a.num(x); ok || c == 0 || c == 1 {
		return a.add(a.mul(x, c), y)
	}
	if _, ok := a.num(y); ok && y == "0" {
		return a.mul(x, c)
	}
	r := a.b.reg(rU32)
	a.b.ins("mad.lo.s32", r, x, imm(c), y)
	return r
}

func (a ia) div(x string, c int) string {
	if n, ok := a.num(x); ok {
		return imm(n / c)
	}
	if c == 1 {
		return x
	}
	r := a.b.reg(rU32)
	a.b.ins("div.u32", r, x, imm(c))
	return r
}

func (a ia) rem(x string, c int) string {
	if n, ok := a.num(x); ok {
		return imm(n % c)
	}
	if c == 1 {
		return "0"
	}
	r := a.b.reg(rU32)
	a.b.ins("rem.u32", r, x, imm(c))
	return r
}

// clamp bounds a signed coordinate to [0, n-1] (for pad and concat, whose out-of-range lanes
// still evaluate the operand but discard it).
func (a ia) clamp(x string, n int) string {
	if v, ok := a.num(x); ok {
		return imm(max(0, min(v, n-1)))
	}
	r := a.b.reg(rU32)
	a.b.ins("max.s32", r, x, "0")
	a.b.ins("min.s32", r, r, imm(n-1))
	return r
}

func (x *index) getCoord(a ia, d int) string {
	if x.coord[d] != "" {
		return x.coord[d]
	}
	var c string
	switch {
	case x.shape[d] == 1:
		c = "0"
	case x.parent != nil:
		c = x.parent.getCoord(a, d)
		if d == len(x.shape)-1 {
			c = a.add(c, imm(x.off))
		}
	default:
		st := x.shape.Strides()
		c = a.div(x.lin, st[d])
		if d > 0 {
			c = a.rem(c, x.shape[d])
		}
	}
	x.coord[d] = c
	return c
}

func (x *index) getLin(a ia) string {
	if x.lin != "" {
		return x.lin
	}
	if x.parent != nil {
		x.lin = a.add(x.parent.getLin(a), imm(x.off))
		return x.lin
	}
	st := x.shape.Strides()
	lin := "0"
	for d := range x.shape {
		if x.shape[d] == 1 {
			continue
		}
		lin = a.mad(x.getCoord(a, d), st[d], lin)
	}
	x.lin = lin
	return lin
}
