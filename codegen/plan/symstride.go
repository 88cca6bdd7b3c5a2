package plan

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Strides over symbolic sizes. A buffer whose symbolic dims do not lead ([2, seq, 48],
// [batch, heads, seq, d]) is laid out contiguously at the run's sizes, so its strides, and those
// of the views a kernel reads it through, are expressions over the dims. SymStridedView is
// ops.StridedView over those expressions; a kernel takes each dim they name as a .u32 parameter
// (the dims' values, not a stride per buffer) and evaluates them once at its start
// (codegen/ptx's symEval, codegen/nvvm's symView.eval).

// SymSizes returns v's sizes as expressions: sizes[v], or its static shape.
func SymSizes(v *ir.Value, sizes map[*ir.Value][]sym.Expr) []sym.Expr {
	if s, ok := sizes[v]; ok {
		return s
	}
	s := make([]sym.Expr, len(v.Type.Shape))
	for i, n := range v.Type.Shape {
		s[i] = sym.Const(int64(n))
	}
	return s
}

// SymContiguous returns the strides of a contiguous tensor of sizes s.
func SymContiguous(s []sym.Expr) []sym.Expr {
	st := make([]sym.Expr, len(s))
	acc := sym.Const(1)
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc = sym.Mul(acc, s[i])
	}
	return st
}

// IsOne reports whether e is the constant 1.
func IsOne(e sym.Expr) bool { n, ok := e.IsConst(); return ok && n == 1 }

// SymStridedView follows v's chain of views (transpose, broadcast_in_dim, slice, reshape) down
// to the buffer it reads and returns that buffer, the view's element offset and its strides,
// each an expression over the dims; ok is false where a view is not strided at every size (a
// reshape across non-contiguous dims, a broadcast of a dim that is not provably 1).
func SymStridedView(v *ir.Value, sizes map[*ir.Value][]sym.Expr) (base *ir.Value, off sym.Expr, st []sym.Expr, ok bool) {
	switch v.Op {
	case "reshape", "transpose", "broadcast_in_dim", "slice":
	default:
		return v, sym.Const(0), SymContiguous(SymSizes(v, sizes)), true
	}
	base, off, ist, ok := SymStridedView(v.Args[0], sizes)
	if !ok {
		return nil, off, nil, false
	}
	in, out := SymSizes(v.Args[0], sizes), SymSizes(v, sizes)
	switch v.Op {
	case "transpose":
		for _, p := range v.Attrs.Ints("perm") {
			st = append(st, ist[p])
		}
	case "broadcast_in_dim":
		st = make([]sym.Expr, len(out))
		for i := range st {
			st[i] = sym.Const(0) // new dims repeat
		}
		for i, d := range v.Attrs.Ints("dims") {
			switch {
			case in[i].Equal(out[d]):
				st[d] = ist[i]
			case !IsOne(in[i]):
				return nil, off, nil, false
			}
		}
	case "slice":
		start, step := v.Attrs.Ints("start"), v.Attrs.Ints("stride")
		for i := range ist {
			off = sym.Add(off, sym.Scale(ist[i], int64(start[i])))
			s := int64(1)
			if step != nil {
				s = int64(step[i])
			}
			st = append(st, sym.Scale(ist[i], s))
		}
	case "reshape":
		if st, ok = symReshapeStrides(in, ist, out); !ok {
			return nil, off, nil, false
		}
	}
	return base, off, st, true
}

// symReshapeStrides is ops' reshapeStrides over expressions: groups of input and output dims
// with provably equal products map onto each other, and a group of input dims must be
// contiguous to be split. Dims of size 1 take any stride.
func symReshapeStrides(in, st, out []sym.Expr) ([]sym.Expr, bool) {
	var id, is []sym.Expr
	for i, n := range in {
		if !IsOne(n) {
			id, is = append(id, n), append(is, st[i])
		}
	}
	strides := make([]sym.Expr, len(out))
	i, o := 0, 0
	for o < len(out) {
		if IsOne(out[o]) {
			strides[o] = sym.Const(0)
			o++
			continue
		}
		if i >= len(id) {
			return nil, false
		}
		// Extend the groups [i, i2) and [o, o2) until their products are provably equal: the
		// shorter product grows (by its symbols' count, then its constant), so the groups are
		// those of the bounds' rule wherever the sizes agree.
		i2, o2 := i+1, o+1
		pi, po := id[i], out[o]
		for !pi.Equal(po) {
			if i2 < len(id) && (o2 >= len(out) || smaller(pi, po)) {
				pi = sym.Mul(pi, id[i2])
				i2++
			} else if o2 < len(out) {
				po = sym.Mul(po, out[o2])
				o2++
			} else {
				return nil, false
			}
		}
		for k := i; k < i2-1; k++ {
			if !is[k].Equal(sym.Mul(id[k+1], is[k+1])) {
				return nil, false
			}
		}
		s := is[i2-1]
		for k := o2 - 1; k >= o; k-- {
			strides[k] = s
			s = sym.Mul(s, out[k])
		}
		i, o = i2, o2
	}
	return strides, i == len(id)
}

// smaller orders two products for symReshapeStrides: fewer symbols first, then the smaller
// constant part.
func smaller(a, b sym.Expr) bool {
	ca, ma, _ := a.Monomials()
	cb, mb, _ := b.Monomials()
	na, nb := degree(ma), degree(mb)
	if na != nb {
		return na < nb
	}
	return coef(ca, ma) < coef(cb, mb)
}

func degree(ms []sym.Monomial) int {
	n := 0
	for _, m := range ms {
		n = max(n, len(m.Names))
	}
	return n
}

func coef(c int64, ms []sym.Monomial) int64 {
	if len(ms) == 1 {
		return ms[0].Coef
	}
	return c
}

// SymbolicCopy reports why g is not a copy through views of one input (the producers' copy
// moving symbolic dims at the run's sizes), or "" when it is.
func SymbolicCopy(g *ir.Graph) string {
	if len(g.Outputs) != 1 {
		return fmt.Sprintf("it has %d outputs", len(g.Outputs))
	}
	for u := g.Outputs[0].Value; u.Op != ir.OpInput && u.Op != ir.OpParam; u = u.Args[0] {
		switch u.Op {
		case "transpose", "reshape", "slice", "broadcast_in_dim":
		default:
			return fmt.Sprintf("it computes %s", u.Op)
		}
	}
	return ""
}
