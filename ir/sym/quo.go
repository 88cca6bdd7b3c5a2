package sym

import "slices"

// Quo is e/d when d divides e exactly as polynomials: d a constant or a single monomial
// (4*batch), e a sum of monomials each of which holds d's names and a multiple of its
// coefficient (64*batch*seq / batch*seq = 64). ok is false otherwise, and for floor divisions
// and overflow: Reshape's -1 beside a symbolic size ([batch, -1] of f32[batch,4,16] is
// [batch,64]) takes the quotient only where it is exact at every size.
func Quo(e, d Expr) (q Expr, ok bool) {
	dc, dm, ok := d.Monomials()
	if !ok || len(dm) > 1 || len(dm) == 1 && dc != 0 {
		return Expr{}, false
	}
	k, names := dc, []string(nil)
	if len(dm) == 1 {
		k, names = dm[0].Coef, dm[0].Names
	}
	ec, em, ok := e.Monomials()
	if !ok || k == 0 || ec%k != 0 || len(names) > 0 && ec != 0 {
		return Expr{}, false
	}
	q = Const(ec / k)
	for _, m := range em {
		if m.Coef%k != 0 {
			return Expr{}, false
		}
		rest := slices.Clone(m.Names)
		for _, n := range names {
			i := slices.Index(rest, n)
			if i < 0 {
				return Expr{}, false
			}
			rest = slices.Delete(rest, i, i+1)
		}
		t := Const(m.Coef / k)
		for _, n := range rest {
			t = Mul(t, Sym(n))
		}
		q = Add(q, t)
	}
	return q, Mul(q, d).Equal(e)
}
