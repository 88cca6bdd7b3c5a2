package sym

import (
	"reflect"
	"testing"
)

func TestMonomials(t *testing.T) {
	for _, tc := range []struct {
		in string
		c  int64
		ms []Monomial
		ok bool
	}{
		{"48*seq", 0, []Monomial{{48, []string{"seq"}}}, true},
		{"2*batch*seq + seq*seq + 3", 3, []Monomial{{2, []string{"batch", "seq"}}, {1, []string{"seq", "seq"}}}, true},
		{"7", 7, nil, true},
		{"(seq+1)/2", 0, nil, false},
		{"seq/2*4 + 1", 0, nil, false},
	} {
		e := mustParse(t, tc.in)
		c, ms, ok := e.Monomials()
		if ok != tc.ok || ok && (c != tc.c || !reflect.DeepEqual(ms, tc.ms)) {
			t.Errorf("%s: Monomials = %d, %v, %v; want %d, %v, %v", tc.in, c, ms, ok, tc.c, tc.ms, tc.ok)
		}
	}
}
