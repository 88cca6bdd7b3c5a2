package sym

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

func mustParse(t *testing.T, s string) Expr {
	t.Helper()
	e, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return e
}

// Equal expressions written differently have one canonical form, which is what String prints.
func TestCanonical(t *testing.T) {
	tests := []struct{ a, b, printed string }{
		{"batch*seq", "seq*batch", "batch*seq"},
		{"(seq+1)-1", "seq", "seq"},
		{"seq+seq", "2*seq", "2*seq"},
		{"seq-seq", "0", "0"},
		{"(batch+1)*(batch-1)", "batch*batch-1", "batch*batch-1"},
		{"(2*seq+2)/4", "(seq+1)/2", "(seq+1)/2"},
		{"(4*seq+3)/2", "2*seq+1", "2*seq+1"},
		{"seq/2/3", "seq/6", "seq/6"},
		{"(seq/2)/2", "seq/4", "seq/4"},
		{"(768*seq)/12", "64*seq", "64*seq"},
		{"seq%2", "seq-2*(seq/2)", "seq-2*(seq/2)"},
		{"(seq+3)/2", "1+(seq+1)/2", "(seq+1)/2+1"},
		{"-(seq/2)", "0-seq/2", "-(seq/2)"},
		{"-seq/2", "(0-seq)/2", "-seq+seq/2"},
		{"7/2", "3", "3"},
		{"-7/2", "-4", "-4"},
		{"-7%3", "2", "2"},
		{"batch*(seq/2)", "(seq/2)*batch", "batch*(seq/2)"},
		{"1*x", "x", "x"},
		{"x*0+5", "5", "5"},
	}
	for _, tc := range tests {
		a, b := mustParse(t, tc.a), mustParse(t, tc.b)
		if !a.Equal(b) {
			t.Errorf("%q = %s and %q = %s differ", tc.a, a, tc.b, b)
		}
		if a.String() != tc.printed {
			t.Errorf("%q prints as %s, want %s", tc.a, a, tc.printed)
		}
	}
	for _, pair := range [][2]string{{"seq", "batch"}, {"seq/2", "seq"}, {"(seq+1)/2", "seq/2"}, {"2*seq", "seq*seq"}, {"-(seq/2)", "-seq/2"}} {
		if mustParse(t, pair[0]).Equal(mustParse(t, pair[1])) {
			t.Errorf("%q == %q", pair[0], pair[1])
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"", "expected a dimension"},
		{"seq+", "expected a dimension"},
		{"seq/batch", "the divisor must be a positive constant"},
		{"seq/0", "/ by 0: the divisor must be a positive constant"},
		{"seq%-2", "% by -2: the divisor must be a positive constant"},
		{"(seq", "expected ')'"},
		{"seq)", `unexpected ')'`},
		{"99999999999999999999", "too large"},
		{"1099511627776*1099511627776", "overflows int64"},
		{"seq.x", `unexpected '.'`},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "nested too deeply"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestRangeAndEval(t *testing.T) {
	r := Ranges{"batch": {1, 64}, "seq": {1, 2048}}
	tests := []struct {
		src    string
		lo, hi int64
	}{
		{"batch*seq", 1, 64 * 2048},
		{"(seq+1)/2", 1, 1024},
		{"seq-3+1", -1, 2046},
		{"seq%2", -2047, 2048}, // interval arithmetic is loose where terms cancel
		{"768", 768, 768},
		{"batch*seq*768", 768, 64 * 2048 * 768},
	}
	for _, tc := range tests {
		lo, hi, err := mustParse(t, tc.src).Range(r)
		if err != nil || lo != tc.lo || hi != tc.hi {
			t.Errorf("Range(%s) = [%d, %d], %v; want [%d, %d]", tc.src, lo, hi, err, tc.lo, tc.hi)
		}
	}
	if _, _, err := mustParse(t, "heads*seq").Range(r); err == nil || !strings.Contains(err.Error(), "symbol heads is not declared") {
		t.Errorf("undeclared symbol: %v", err)
	}
	if v, err := mustParse(t, "(seq+1)/2*batch").Eval(map[string]int64{"seq": 7, "batch": 3}); err != nil || v != 12 {
		t.Errorf("Eval = %d, %v; want 12", v, err)
	}
	if _, err := mustParse(t, "seq").Eval(nil); err == nil {
		t.Errorf("Eval without the symbol succeeded")
	}
	big := Mul(Const(1<<40), Sym("x"))
	if _, err := big.Eval(map[string]int64{"x": 1 << 30}); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Errorf("overflowing Eval: %v", err)
	}
	if got := mustParse(t, "(b+a)*(a/2)+c").Symbols(); fmt.Sprint(got) != "[a b c]" {
		t.Errorf("Symbols = %v", got)
	}
}

// node is an expression tree evaluated directly: the reference the canonical form is checked
// against.
type node struct {
	op   byte // 'c' const, 's' symbol, '+', '-', '*', '/', '%'
	n    int64
	name string
	l, r *node
}

var names = []string{"a", "b", "c"}

func randNode(rng *rand.Rand, depth int) *node {
	if depth == 0 || rng.Intn(3) == 0 {
		if rng.Intn(2) == 0 {
			return &node{op: 'c', n: int64(rng.Intn(9) - 3)}
		}
		return &node{op: 's', name: names[rng.Intn(len(names))]}
	}
	switch op := "+-*/%"[rng.Intn(5)]; op {
	case '/', '%':
		return &node{op: op, l: randNode(rng, depth-1), n: int64(rng.Intn(4) + 1)}
	default:
		return &node{op: op, l: randNode(rng, depth-1), r: randNode(rng, depth-1)}
	}
}

func (x *node) text() string {
	switch x.op {
	case 'c':
		return fmt.Sprintf("(%d)", x.n)
	case 's':
		return x.name
	case '/', '%':
		return fmt.Sprintf("(%s%c%d)", x.l.text(), x.op, x.n)
	}
	return fmt.Sprintf("(%s%c%s)", x.l.text(), x.op, x.r.text())
}

func (x *node) eval(env map[string]int64) int64 {
	switch x.op {
	case 'c':
		return x.n
	case 's':
		return env[x.name]
	case '+':
		return x.l.eval(env) + x.r.eval(env)
	case '-':
		return x.l.eval(env) - x.r.eval(env)
	case '*':
		return x.l.eval(env) * x.r.eval(env)
	case '/':
		q, _ := floorDiv(x.l.eval(env), x.n)
		return q
	}
	_, r := floorDiv(x.l.eval(env), x.n)
	return r
}

// Random expressions: the canonical form evaluates like the tree, prints and parses back to
// itself, and its interval over the ranges contains every evaluation inside them; two canonical
// forms that compare equal evaluate equal.
func TestProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	ranges := Ranges{"a": {0, 5}, "b": {1, 9}, "c": {3, 3}}
	var seen []Expr
	var trees []*node
	for i := 0; i < 3000; i++ {
		x := randNode(rng, 4)
		e := mustParse(t, x.text())
		back, err := Parse(e.String())
		if err != nil || !back.Equal(e) {
			t.Fatalf("%s: printed %s reparses as %s, %v", x.text(), e, back, err)
		}
		lo, hi, err := e.Range(ranges)
		if err != nil {
			t.Fatalf("Range(%s): %v", e, err)
		}
		for k := 0; k < 10; k++ {
			env := map[string]int64{}
			for _, n := range names {
				env[n] = ranges[n].Lo + rng.Int63n(ranges[n].Hi-ranges[n].Lo+1)
			}
			got, err := e.Eval(env)
			if want := x.eval(env); err != nil || got != want {
				t.Fatalf("%s = %s at %v: %d, %v; want %d", x.text(), e, env, got, err, want)
			}
			if got < lo || got > hi {
				t.Fatalf("%s = %d at %v is outside its range [%d, %d]", e, got, env, lo, hi)
			}
		}
		for j, f := range seen {
			if !f.Equal(e) {
				continue
			}
			for k := 0; k < 5; k++ {
				env := map[string]int64{"a": rng.Int63n(40) - 20, "b": rng.Int63n(40) - 20, "c": rng.Int63n(40) - 20}
				if x.eval(env) != trees[j].eval(env) {
					t.Fatalf("%s and %s are both %s but differ at %v", x.text(), trees[j].text(), e, env)
				}
			}
		}
		if len(seen) < 300 {
			seen, trees = append(seen, e), append(trees, x)
		}
	}
}

// Commuting and reassociating a sum or product never changes the canonical form.
func TestCommuted(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 500; i++ {
		x, y, z := randNode(rng, 3), randNode(rng, 3), randNode(rng, 3)
		for _, op := range "+*" {
			a := mustParse(t, fmt.Sprintf("(%s%c%s)%c%s", x.text(), op, y.text(), op, z.text()))
			b := mustParse(t, fmt.Sprintf("%s%c(%s%c%s)", z.text(), op, y.text(), op, x.text()))
			if !a.Equal(b) {
				t.Fatalf("%s != %s", a, b)
			}
		}
	}
}

// Whatever parses prints, parses back to an equal expression, and evaluates the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"batch*seq", "(seq+1)/2", "-seq/2%3", "a*(b/2)*c-7", "((a))", "2*a*a/4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			return
		}
		back, err := Parse(e.String())
		if err != nil || !back.Equal(e) || back.String() != e.String() {
			t.Fatalf("%q prints as %q, which parses as %v, %v", s, e, back, err)
		}
		env := map[string]int64{}
		for _, n := range e.Symbols() {
			env[n] = int64(len(n)*7%13) - 3
		}
		v1, err1 := e.Eval(env)
		v2, err2 := back.Eval(env)
		if v1 != v2 || (err1 == nil) != (err2 == nil) {
			t.Fatalf("%q: %d, %v vs %d, %v", s, v1, err1, v2, err2)
		}
	})
}
