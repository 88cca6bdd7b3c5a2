package frontend

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// DropoutTrain is F.dropout in training mode: each element of x is kept with probability 1−p
// and scaled by 1/(1−p), or zeroed. The mask comes from philox_uniform(key) with the given
// stream: element i is kept where its uniform u < 1−p (u in [0, 1), 24 random bits, so the keep
// rate is 1−p rounded down to a multiple of 2⁻²⁴). key is an i64 scalar tensor, a fresh value per
// step (the train step derives it from the seed and the step); stream tells the dropout layers of
// one model apart. p = 0 returns x; p = 1 returns zeros, as PyTorch.
func DropoutTrain(x *Tensor, p float64, key *Tensor, stream int) *Tensor {
	s := x.state()
	s.own(key, "dropout")
	if !x.DType().IsFloat() || !(p >= 0 && p <= 1) {
		s.failf("dropout: want a float input and a probability in [0, 1]: %s, p %v", x.describe("input"), p)
	}
	if !key.Type().Equal(ir.T(ir.I64)) {
		s.failf("dropout: the key must be an i64 scalar, %s", key.describe("key"))
	}
	if stream < 0 {
		s.failf("dropout: stream %d is negative", stream)
	}
	switch p {
	case 0:
		return x
	case 1:
		return x.MulScalar(0)
	}
	var want []sym.Expr // over a symbolic batch, the mask's sizes are x's: element i is the same number at any bound
	if x.v.Type.Sym != nil {
		want = x.v.Type.Axes()
	}
	u := s.opWant("philox_uniform", ir.Attrs{"shape": x.Shape(), "stream": stream}, want, key)
	keep := u.Lt(u.scalar(1 - p))
	return Where(keep, x.MulScalar(1/(1-p)), x.scalar(0))
}
