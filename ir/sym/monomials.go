package sym

// Monomial is one term of an expression's canonical sum: Coef times the product of Names (a
// name repeated is a power).
type Monomial struct {
	Coef  int64
	Names []string
}

// Monomials returns e as its constant plus its monomials, for code that evaluates e at run time
// from the dims' values (codegen's strides over symbolic sizes). ok is false when a term holds a
// floor division or e overflowed.
func (e Expr) Monomials() (c int64, ms []Monomial, ok bool) {
	if e.ovf {
		return 0, nil, false
	}
	for _, t := range e.terms {
		m := Monomial{Coef: t.coef}
		for _, a := range t.atoms {
			if a.num != nil {
				return 0, nil, false
			}
			m.Names = append(m.Names, a.name)
		}
		ms = append(ms, m)
	}
	return e.c, ms, true
}
