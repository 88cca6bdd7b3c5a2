package sym

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Expr is a canonical expression: c + Σ terms.
type Expr struct {
	c     int64
	terms []term // sorted by key, unique keys, nonzero coefficients
	ovf   bool
}

// term is coef · Π atoms.
type term struct {
	coef  int64
	atoms []atom // sorted by key; a repeated atom is a power
	key   string // the atoms' keys joined by "*"
}

// atom is a symbol, or ⌊num/den⌋ when num is not nil.
type atom struct {
	name string
	num  *Expr
	den  int64
	key  string // name, or the printed division
}

// Const is the constant n.
func Const(n int64) Expr { return Expr{c: n} }

// Sym is the symbol name.
func Sym(name string) Expr {
	return Expr{terms: []term{{coef: 1, atoms: []atom{{name: name, key: name}}, key: name}}}
}

// IsConst returns the expression's value when it has no symbols.
func (e Expr) IsConst() (int64, bool) { return e.c, len(e.terms) == 0 && !e.ovf }

// Overflowed reports whether computing e overflowed int64 somewhere.
func (e Expr) Overflowed() bool { return e.ovf }

// Equal reports whether e and f have the same canonical form.
func (e Expr) Equal(f Expr) bool {
	if e.c != f.c || len(e.terms) != len(f.terms) || e.ovf != f.ovf {
		return false
	}
	for i := range e.terms {
		if e.terms[i].coef != f.terms[i].coef || e.terms[i].key != f.terms[i].key {
			return false
		}
	}
	return true
}

func addChk(a, b int64, ovf *bool) int64 {
	s := a + b
	if (s > a) != (b > 0) {
		*ovf = true
	}
	return s
}

func mulChk(a, b int64, ovf *bool) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(abs(a)), uint64(abs(b)))
	if hi != 0 || lo > math.MaxInt64 || a == math.MinInt64 || b == math.MinInt64 {
		*ovf = true
		return 0
	}
	if (a < 0) != (b < 0) {
		return -int64(lo)
	}
	return int64(lo)
}

func abs(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

// Add is e + f.
func Add(e, f Expr) Expr {
	r := Expr{ovf: e.ovf || f.ovf}
	r.c = addChk(e.c, f.c, &r.ovf)
	i, j := 0, 0
	for i < len(e.terms) || j < len(f.terms) {
		switch {
		case j == len(f.terms) || i < len(e.terms) && e.terms[i].key < f.terms[j].key:
			r.terms = append(r.terms, e.terms[i])
			i++
		case i == len(e.terms) || f.terms[j].key < e.terms[i].key:
			r.terms = append(r.terms, f.terms[j])
			j++
		default:
			t := e.terms[i]
			t.coef = addChk(t.coef, f.terms[j].coef, &r.ovf)
			if t.coef != 0 {
				r.terms = append(r.terms, t)
			}
			i, j = i+1, j+1
		}
	}
	return r
}

// Scale is k·e.
func Scale(e Expr, k int64) Expr {
	if k == 0 {
		return Expr{ovf: e.ovf}
	}
	r := Expr{ovf: e.ovf}
	r.c = mulChk(e.c, k, &r.ovf)
	r.terms = make([]term, len(e.terms))
	for i, t := range e.terms {
		t.coef = mulChk(t.coef, k, &r.ovf)
		r.terms[i] = t
	}
	return r
}

// Sub is e - f.
func Sub(e, f Expr) Expr { return Add(e, Scale(f, -1)) }

// Mul is e·f.
func Mul(e, f Expr) Expr {
	r := Scale(f, e.c)
	r.ovf = r.ovf || e.ovf
	ovf := false
	for _, t := range e.terms {
		var p Expr
		if f.c != 0 {
			u := t
			u.coef = mulChk(t.coef, f.c, &ovf)
			p.terms = append(p.terms, u)
		}
		for _, u := range f.terms {
			p = Add(p, Expr{terms: []term{mulTerms(t, u, &ovf)}})
		}
		r = Add(r, p)
	}
	r.ovf = r.ovf || ovf
	return r
}

func mulTerms(t, u term, ovf *bool) term {
	atoms := append(slices.Clone(t.atoms), u.atoms...)
	slices.SortStableFunc(atoms, func(a, b atom) int { return strings.Compare(a.key, b.key) })
	return newTerm(mulChk(t.coef, u.coef, ovf), atoms)
}

func newTerm(coef int64, atoms []atom) term {
	keys := make([]string, len(atoms))
	for i, a := range atoms {
		keys[i] = a.key
	}
	return term{coef: coef, atoms: atoms, key: strings.Join(keys, "*")}
}

// floorDiv is ⌊a/d⌋ for d > 0 and the remainder in [0, d).
func floorDiv(a, d int64) (q, r int64) {
	q, r = a/d, a%d
	if r < 0 {
		q, r = q-1, r+d
	}
	return q, r
}

// Div is ⌊e/d⌋; d must be positive (Parse and the op rules check before calling).
func Div(e Expr, d int64) Expr {
	if d <= 0 {
		panic("sym: division by a non-positive constant")
	}
	if d == 1 || e.ovf {
		return e
	}
	// ⌊(d·A + R)/d⌋ = A + ⌊R/d⌋ for integer A: keep in R only coefficients in [0, d).
	var a, rem Expr
	q, r := floorDiv(e.c, d)
	a.c, rem.c = q, r
	for _, t := range e.terms {
		q, r := floorDiv(t.coef, d)
		if q != 0 {
			u := t
			u.coef = q
			a.terms = append(a.terms, u)
		}
		if r != 0 {
			u := t
			u.coef = r
			rem.terms = append(rem.terms, u)
		}
	}
	if len(rem.terms) == 0 { // 0 <= rem.c < d
		return a
	}
	// ⌊g·R'/(g·d')⌋ = ⌊R'/d'⌋: divide out a common factor of R and d.
	g := gcd(rem.c, d)
	for _, t := range rem.terms {
		g = gcd(g, t.coef)
	}
	if g > 1 {
		rem.c /= g
		for i := range rem.terms {
			rem.terms[i].coef /= g
		}
		d /= g
		if d == 1 {
			return Add(a, rem)
		}
	}
	// ⌊⌊N/e⌋/d⌋ = ⌊N/(e·d)⌋.
	if rem.c == 0 && len(rem.terms) == 1 && rem.terms[0].coef == 1 && len(rem.terms[0].atoms) == 1 && rem.terms[0].atoms[0].num != nil {
		in := rem.terms[0].atoms[0]
		var ovf bool
		if dd := mulChk(in.den, d, &ovf); !ovf {
			return Add(a, Div(*in.num, dd))
		}
	}
	num := rem
	at := atom{num: &num, den: d}
	at.key = at.String()
	return Add(a, Expr{terms: []term{newTerm(1, []atom{at})}})
}

func gcd(a, b int64) int64 {
	a, b = abs(a), abs(b)
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Mod is e mod d, in [0, d): e - d·⌊e/d⌋.
func Mod(e Expr, d int64) Expr { return Sub(e, Scale(Div(e, d), d)) }

// Symbols returns the symbols e mentions, sorted, each once.
func (e Expr) Symbols() []string {
	var out []string
	var walk func(Expr)
	walk = func(e Expr) {
		for _, t := range e.terms {
			for _, a := range t.atoms {
				if a.num != nil {
					walk(*a.num)
				} else {
					out = append(out, a.name)
				}
			}
		}
	}
	walk(e)
	slices.Sort(out)
	return slices.Compact(out)
}

// String prints e in the .gir syntax: "batch*seq", "2*seq-1", "(seq+1)/2".
func (e Expr) String() string {
	if e.ovf {
		return "<overflow>"
	}
	var sb strings.Builder
	for i, t := range e.terms {
		coef := t.coef
		wrap := coef != 1 || len(t.atoms) > 1
		switch {
		case coef < 0:
			sb.WriteByte('-')
			coef = -coef
		case i > 0:
			sb.WriteByte('+')
		}
		if coef != 1 {
			sb.WriteString(strconv.FormatInt(coef, 10))
		}
		for j, a := range t.atoms {
			if j > 0 || coef != 1 {
				sb.WriteByte('*')
			}
			if wrap && a.num != nil {
				sb.WriteString("(" + a.key + ")")
			} else {
				sb.WriteString(a.key)
			}
		}
	}
	switch {
	case len(e.terms) == 0:
		sb.WriteString(strconv.FormatInt(e.c, 10))
	case e.c > 0:
		sb.WriteString("+" + strconv.FormatInt(e.c, 10))
	case e.c < 0:
		sb.WriteString(strconv.FormatInt(e.c, 10))
	}
	return sb.String()
}

func (a atom) String() string {
	if a.num == nil {
		return a.name
	}
	n := *a.num
	if n.c == 0 && len(n.terms) == 1 && n.terms[0].coef == 1 && len(n.terms[0].atoms) == 1 && n.terms[0].atoms[0].num == nil {
		return n.terms[0].atoms[0].name + "/" + strconv.FormatInt(a.den, 10)
	}
	return "(" + n.String() + ")/" + strconv.FormatInt(a.den, 10)
}

// Interval is the closed range [Lo, Hi] of a dim.
type Interval struct{ Lo, Hi int64 }

// Ranges gives every declared symbol its interval.
type Ranges map[string]Interval

// Range returns bounds lo <= e <= hi holding for every assignment of the symbols inside r.
// They are exact for sums of products with positive coefficients (what shapes are made of) and
// may be loose where terms cancel.
func (e Expr) Range(r Ranges) (lo, hi int64, err error) {
	if e.ovf {
		return 0, 0, fmt.Errorf("the expression overflows int64")
	}
	var ovf bool
	iv, err := e.interval(r, &ovf)
	if err == nil && ovf {
		err = fmt.Errorf("bounding %s overflows int64", e)
	}
	return iv.Lo, iv.Hi, err
}

func (e Expr) interval(r Ranges, ovf *bool) (Interval, error) {
	sum := Interval{e.c, e.c}
	for _, t := range e.terms {
		p := Interval{t.coef, t.coef}
		for _, a := range t.atoms {
			var ai Interval
			if a.num == nil {
				iv, ok := r[a.name]
				if !ok {
					return Interval{}, fmt.Errorf("symbol %s is not declared", a.name)
				}
				ai = iv
			} else {
				n, err := a.num.interval(r, ovf)
				if err != nil {
					return Interval{}, err
				}
				ai.Lo, _ = floorDiv(n.Lo, a.den)
				ai.Hi, _ = floorDiv(n.Hi, a.den)
			}
			p = mulInterval(p, ai, ovf)
		}
		sum = Interval{addChk(sum.Lo, p.Lo, ovf), addChk(sum.Hi, p.Hi, ovf)}
	}
	return sum, nil
}

func mulInterval(a, b Interval, ovf *bool) Interval {
	c := [4]int64{mulChk(a.Lo, b.Lo, ovf), mulChk(a.Lo, b.Hi, ovf), mulChk(a.Hi, b.Lo, ovf), mulChk(a.Hi, b.Hi, ovf)}
	return Interval{min(c[0], c[1], c[2], c[3]), max(c[0], c[1], c[2], c[3])}
}

// Eval computes e at the sizes in env (point intervals make Range exact).
func (e Expr) Eval(env map[string]int64) (int64, error) {
	r := make(Ranges, len(env))
	for k, v := range env {
		r[k] = Interval{v, v}
	}
	v, _, err := e.Range(r)
	return v, err
}
