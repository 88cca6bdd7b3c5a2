package ops

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

func product(es []sym.Expr) sym.Expr {
	p := sym.Const(1)
	for _, e := range es {
		p = sym.Mul(p, e)
	}
	return p
}

// exactDiv returns e/d when d provably divides e.
func exactDiv(e sym.Expr, d int64) (sym.Expr, bool) {
	if d <= 0 {
		return e, false
	}
	q := sym.Div(e, d)
	return q, sym.Scale(q, d).Equal(e)
}

// symReshape keeps the product of the sizes: the result is want when given (its product must
// equal the operand's), else derived from the shape attribute (the bounds) by matching groups of
// operand and result dims with equal bound products: a group of static dims stays static, a
// group merges into one result dim as its product, and one symbolic dim splits into static dims
// and one dim that is its quotient by them, if exactly one choice divides exactly.
func symReshape(args []ir.Type, a ir.Attrs, want []sym.Expr, _ sym.Ranges) ([]sym.Expr, error) {
	x, shape := args[0], a.Ints("shape")
	in := product(x.Axes())
	if want != nil {
		if len(want) != len(shape) {
			return nil, fmt.Errorf("result %s has %d dims, shape %v has %d", ir.Type{DType: x.DType, Sym: want}, len(want), ir.Shape(shape), len(shape))
		}
		if out := product(want); !out.Equal(in) {
			return nil, fmt.Errorf("%s to %s changes the element count: %s is not %s", x, ir.Type{DType: x.DType, Sym: want}, out, in)
		}
		return want, nil
	}
	fail := func(why string) error {
		return fmt.Errorf("cannot express %s reshaped to %v over its sizes (%s): %s; declare the result type", x, ir.Shape(shape), in, why)
	}
	out := make([]sym.Expr, 0, len(shape))
	i, j := 0, 0
	for i < len(x.Shape) || j < len(shape) {
		switch {
		case j < len(shape) && shape[j] == 1 && (i == len(x.Shape) || x.Shape[i] != 1):
			out = append(out, sym.Const(1))
			j++
			continue
		case i < len(x.Shape) && x.Shape[i] == 1 && (j == len(shape) || shape[j] != 1):
			if _, ok := x.Axis(i).IsConst(); !ok {
				return nil, fail(fmt.Sprintf("dim %d (%s) has the bound 1", i, x.Axis(i)))
			}
			i++
			continue
		case i == len(x.Shape) || j == len(shape):
			return nil, fail("the bounds do not group")
		}
		i0, j0 := i, j
		pi, pj := x.Shape[i], shape[j]
		i, j = i+1, j+1
		for pi != pj {
			if pi == 0 || pj == 0 {
				return nil, fail("a dim's bound is 0")
			}
			if pi < pj && i < len(x.Shape) {
				pi *= x.Shape[i]
				i++
			} else if pj < pi && j < len(shape) {
				pj *= shape[j]
				j++
			} else {
				return nil, fail("the bounds do not group")
			}
		}
		group := product(x.Axes()[i0:i])
		if _, ok := group.IsConst(); ok {
			for _, n := range shape[j0:j] {
				out = append(out, sym.Const(int64(n)))
			}
			continue
		}
		if j-j0 == 1 {
			out = append(out, group)
			continue
		}
		// Split: the symbolic result dim is the one whose quotient is exact and has its bound.
		var pick []sym.Expr
		for k := j0; k < j; k++ {
			rest := int64(1)
			for m := j0; m < j; m++ {
				if m != k {
					rest *= int64(shape[m])
				}
			}
			q, ok := exactDiv(group, rest)
			if !ok {
				continue
			}
			cand := make([]sym.Expr, 0, j-j0)
			for m := j0; m < j; m++ {
				if m == k {
					cand = append(cand, q)
				} else {
					cand = append(cand, sym.Const(int64(shape[m])))
				}
			}
			if pick != nil {
				return nil, fail(fmt.Sprintf("%s splits into %v in more than one way", group, ir.Shape(shape[j0:j])))
			}
			pick = cand
		}
		if pick == nil {
			return nil, fail(fmt.Sprintf("%s is not provably a multiple of the static dims of %v", group, ir.Shape(shape[j0:j])))
		}
		out = append(out, pick...)
	}
	return out, nil
}
