package nvvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	irg "github.com/gcomp/gcomp/ir"
)

// index is the position of one element in a value's shape as i32 values: coordinates and the
// linear index, each derived from the other on demand, once.
type index struct {
	shape irg.Shape
	coord []value.Value // nil where not derived yet
	lin   value.Value
	// grp, if not nil, places the index in an element group (repeat.go).
	grp *laneGroup
}

func newIndexLin(shape irg.Shape, lin value.Value) *index {
	return &index{shape: shape, coord: make([]value.Value, len(shape)), lin: lin}
}

func newIndexCoords(shape irg.Shape, coord []value.Value) *index {
	return &index{shape: shape, coord: coord}
}

func (kg *kgen) coord(x *index, d int) value.Value {
	if x.coord[d] != nil {
		return x.coord[d]
	}
	var c value.Value
	if g := x.grp; g != nil && g.own && g.j > 0 {
		c = kg.coord(g.lead, d) // lane j: the lead's coordinates but the last, plus j there
		if d == len(x.shape)-1 {
			c = kg.add(c, ci(g.j))
		}
	} else if x.shape[d] == 1 {
		c = ci(0)
	} else {
		c = kg.div(x.lin, x.shape.Strides()[d])
		if d > 0 {
			c = kg.rem(c, x.shape[d])
		}
	}
	x.coord[d] = c
	return c
}

func (kg *kgen) lin(x *index) value.Value {
	if x.lin != nil {
		return x.lin
	}
	if g := x.grp; g != nil && g.own && g.j > 0 {
		x.lin = kg.add(kg.lin(g.lead), ci(g.j))
		return x.lin
	}
	st := x.shape.Strides()
	var lin value.Value = ci(0)
	for d := range x.shape {
		if x.shape[d] != 1 {
			lin = kg.add(kg.mul(kg.coord(x, d), st[d]), lin)
		}
	}
	x.lin = lin
	if x.grp != nil && x.grp.own {
		kg.aligned[lin] = x.grp.n // the lead of a group repeat.go built: a multiple of n
	}
	return lin
}

// Index arithmetic on i32 with constant folding, so static parts cost no instruction.

func num(v value.Value) (int, bool) {
	if c, ok := v.(*constant.Int); ok {
		return int(c.X.Int64()), true
	}
	return 0, false
}

func (kg *kgen) add(x, y value.Value) value.Value {
	nx, okx := num(x)
	ny, oky := num(y)
	switch {
	case okx && oky:
		return ci(nx + ny)
	case okx && nx == 0:
		return y
	case oky && ny == 0:
		return x
	}
	return kg.b.NewAdd(x, y)
}

func (kg *kgen) sub(x, y value.Value) value.Value {
	if ny, ok := num(y); ok {
		return kg.add(x, ci(-ny))
	}
	return kg.b.NewSub(x, y)
}

func (kg *kgen) mul(x value.Value, c int) value.Value {
	if n, ok := num(x); ok {
		return ci(n * c)
	}
	switch c {
	case 0:
		return ci(0)
	case 1:
		return x
	}
	return kg.b.NewMul(x, ci(c))
}

func (kg *kgen) div(x value.Value, c int) value.Value {
	if n, ok := num(x); ok {
		return ci(n / c)
	}
	if c == 1 {
		return x
	}
	return kg.b.NewUDiv(x, ci(c))
}

func (kg *kgen) rem(x value.Value, c int) value.Value {
	if n, ok := num(x); ok {
		return ci(n % c)
	}
	if c == 1 {
		return ci(0)
	}
	return kg.b.NewURem(x, ci(c))
}

// clamp bounds a signed coordinate to [0, n-1].
func (kg *kgen) clamp(x value.Value, n int) value.Value {
	if v, ok := num(x); ok {
		return ci(max(0, min(v, n-1)))
	}
	lo := kg.b.NewSelect(kg.b.NewICmp(enum.IPredSLT, x, ci(0)), ci(0), x)
	return kg.b.NewSelect(kg.b.NewICmp(enum.IPredSGT, lo, ci(n-1)), ci(n-1), lo)
}

// inRange is 0 ≤ c < n for a signed c (one unsigned compare covers both ends).
func (kg *kgen) inRange(c value.Value, n int) value.Value {
	return kg.b.NewICmp(enum.IPredULT, c, ci(n))
}

// sameIndex reports whether x and y have coordinates that are the same i32 values: equal
// constants, or the same value, or the same constant-folded arithmetic (add, mul, udiv, urem) of
// such. False is "not known to be the same".
func (kg *kgen) sameIndex(x, y *index) bool {
	if !x.shape.Equal(y.shape) {
		return false
	}
	for d := range x.shape {
		if !sameValue(kg.coord(x, d), kg.coord(y, d)) {
			return false
		}
	}
	return true
}

func sameValue(a, b value.Value) bool {
	if a == b {
		return true
	}
	if na, ok := num(a); ok {
		nb, ok := num(b)
		return ok && na == nb
	}
	ka, xa, ya := binop(a)
	kb, xb, yb := binop(b)
	return ka != "" && ka == kb && sameValue(xa, xb) && sameValue(ya, yb)
}

// binop is the index arithmetic v is, if it is: its kind and operands.
func binop(v value.Value) (kind string, x, y value.Value) {
	switch v := v.(type) {
	case *ir.InstAdd:
		return "add", v.X, v.Y
	case *ir.InstMul:
		return "mul", v.X, v.Y
	case *ir.InstUDiv:
		return "udiv", v.X, v.Y
	case *ir.InstURem:
		return "urem", v.X, v.Y
	}
	return "", nil, nil
}
