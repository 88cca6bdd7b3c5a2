package onnx

import "fmt"

func init() { converters["Det"] = convDet }

// maxDet is the largest matrix Det expands (4×4: 24 products of 4).
const maxDet = 4

// convDet computes the determinant by its definition, the Leibniz expansion
// Σ_σ sign(σ)·Π_i x[…, i, σ(i)], over the batch dims at once; the op table has no LU
// factorization (its pivots depend on the data), so matrices over maxDet are refused.
func convDet(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	x := n.in[0]
	r := len(x.t.Shape)
	if r < 2 || x.t.Shape[r-1] != x.t.Shape[r-2] || !x.t.DType.IsFloat() {
		return nil, fmt.Errorf("Det wants float square matrices [..., M, M], has %s", x.t)
	}
	m := x.t.Shape[r-1]
	if m > maxDet {
		return nil, unsupportedf("Det of %d×%d matrices is not supported (supported: up to %d×%d, by the Leibniz expansion)", m, m, maxDet, maxDet)
	}
	batch := x.t.Shape[:r-2].Clone()
	if m == 0 {
		return one(n.broadcastTo(scalar(x.t.DType, 1), batch)) // the empty product
	}
	elem := func(i, j int) *val {
		e := n.sliceAxis(n.sliceAxis(x, r-2, i, i+1, 1), r-1, j, j+1, 1)
		return n.reshape(e, batch.Clone())
	}
	var det *val
	for _, p := range permutations(m) {
		term := elem(0, p.perm[0])
		for i := 1; i < m; i++ {
			term = n.bin("mul", term, elem(i, p.perm[i]))
		}
		switch {
		case det == nil && p.sign > 0:
			det = term
		case det == nil:
			det = n.unary("neg", term)
		case p.sign > 0:
			det = n.bin("add", det, term)
		default:
			det = n.bin("sub", det, term)
		}
	}
	return []*val{det}, nil
}

type signedPerm struct {
	perm []int
	sign int
}

// permutations lists the permutations of 0..m-1 with their signs.
func permutations(m int) []signedPerm {
	if m == 0 {
		return []signedPerm{{nil, 1}}
	}
	var out []signedPerm
	for _, p := range permutations(m - 1) {
		// Insert m-1 at each position; moving it k places from the end flips the sign k times.
		for at := 0; at <= len(p.perm); at++ {
			q := append(append(append([]int{}, p.perm[:at]...), m-1), p.perm[at:]...)
			s := p.sign
			if (len(p.perm)-at)%2 == 1 {
				s = -s
			}
			out = append(out, signedPerm{q, s})
		}
	}
	return out
}
