package compiler_test

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// Dropout's mask over a symbolic batch: philox_uniform typed over the batch is a function of
// each element's row-major index, which is the same at the run's sizes as at the bound's when
// one symbolic dim leads. One build runs at 1, primes and the bound (memchecked) equal to the
// reference interpreter at that batch and, bit for bit, to the static build's; over two symbolic
// dims (or a static dim before the symbolic one) the index at the run is not the bound's, and
// the kernel is refused.
func TestSymbolicDropoutMask(t *testing.T) {
	g, err := ir.Parse("s.gir", []byte("graph s {\n  dims { batch in [1,11] }\n  input %key : i64[]\n  input %x : f32[batch,3,5]\n"+
		"  %0 = philox_uniform(%key) {shape=[11,3,5], stream=2} : f32[batch,3,5]\n"+
		"  %c = constant() {dtype=f32, shape=[], value=[0.5]} : f32[]\n  %1 = broadcast_in_dim(%c) {shape=[11,3,5], dims=[]} : f32[batch,3,5]\n"+
		"  %2 = lt(%0, %1) : bool[batch,3,5]\n  %z = constant() {dtype=f32, shape=[], value=[0]} : f32[]\n"+
		"  %3 = broadcast_in_dim(%z) {shape=[11,3,5], dims=[]} : f32[batch,3,5]\n  %4 = select(%2, %x, %3) : f32[batch,3,5]\n"+
		"  output y = %4\n  output u = %0\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, g)
	checkStaticBits(t, g)
	for _, tc := range []struct{ name, body string }{
		{"two symbolic dims", "  dims { b in [1,4], t in [1,9] }\n  input %key : i64[]\n" +
			"  %0 = philox_uniform(%key) {shape=[4,9,2]} : f32[b,t,2]\n  output u = %0\n"},
		{"a static dim before the batch", "  dims { batch in [1,8] }\n  input %key : i64[]\n" +
			"  %0 = philox_uniform(%key) {shape=[2,8,3]} : f32[2,batch,3]\n  output u = %0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, "graph s {\n"+tc.body+"}\n", "draws random numbers over rows other than one leading symbolic dim")
		})
	}
}
