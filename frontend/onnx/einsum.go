package onnx

import (
	"fmt"
	"strings"
)

// einsumEllipsis replaces each operand's "..." by letters the equation does not use, one per
// dim the ellipsis stands for, aligned from the right as numpy aligns them (an operand with
// fewer such dims takes the last letters), and the output's "..." by all of them. It returns
// those letters ("" without an ellipsis). Ellipsis dims must agree in size across operands:
// broadcasting a size-1 dim against a larger one is refused.
func (n *node) einsumEllipsis(eq string, terms []string, out *string, explicit bool) (string, error) {
	if !strings.Contains(eq, "...") {
		if strings.Contains(eq, ".") {
			return "", fmt.Errorf("equation %q: a '.' outside an ellipsis", eq)
		}
		return "", nil
	}
	k := make([]int, len(terms))
	most := 0
	for i, t := range terms {
		switch strings.Count(t, "...") {
		case 0:
			k[i] = -1
			continue
		case 1:
		default:
			return "", fmt.Errorf("equation %q: operand %d has two ellipses", eq, i)
		}
		if k[i] = len(n.in[i].t.Shape) - (len(t) - 3); k[i] < 0 {
			return "", fmt.Errorf("equation %q: operand %d has rank %d", eq, i, len(n.in[i].t.Shape))
		}
		most = max(most, k[i])
	}
	var fresh []byte
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") {
		if len(fresh) < most && !strings.ContainsRune(eq, rune(c)) {
			fresh = append(fresh, c)
		}
	}
	if len(fresh) < most {
		return "", unsupportedf("Einsum's ellipsis stands for %d dims, more than the letters the equation leaves free", most)
	}
	sizes := make([]int, most)
	for i, t := range terms {
		if k[i] < 0 {
			continue
		}
		at := strings.Index(t, "...")
		for j := 0; j < k[i]; j++ {
			d, slot := n.in[i].t.Shape[at+j], most-k[i]+j
			if sizes[slot] != 0 && sizes[slot] != d {
				return "", unsupportedf("Einsum's ellipsis broadcasting dims of sizes %d and %d is not supported", sizes[slot], d)
			}
			sizes[slot] = d
		}
		terms[i] = strings.Replace(t, "...", string(fresh[most-k[i]:]), 1)
	}
	if explicit {
		*out = strings.Replace(*out, "...", string(fresh), 1)
		if strings.Contains(*out, ".") {
			return "", fmt.Errorf("equation %q: bad output", eq)
		}
	}
	return string(fresh), nil
}

// einsumDiagonals takes, for each letter repeated in one operand's term, the diagonal of those
// dims (x[..., i, ..., i, ...] → x[..., i, ...]), and returns the operand and its term without
// the repeats. The diagonal is a gather of the flattened pair at the positions i·(d+1).
func (n *node) einsumDiagonals(x *val, term string) (*val, string, error) {
	for {
		p, q := -1, -1
		for i := 0; i < len(term) && q < 0; i++ {
			if j := strings.IndexByte(term[i+1:], term[i]); j >= 0 {
				p, q = i, i+1+j
			}
		}
		if q < 0 {
			return x, term, nil
		}
		d := x.t.Shape[p]
		if x.t.Shape[q] != d {
			return nil, "", fmt.Errorf("index %q has sizes %d and %d in one operand", term[p], d, x.t.Shape[q])
		}
		var perm []int
		var rest []byte
		for i := range term {
			if i != p && i != q {
				perm, rest = append(perm, i), append(rest, term[i])
			}
		}
		x = n.transpose(x, append(perm, p, q))
		flat := x.t.Shape[:len(perm)].Clone()
		x = n.reshape(x, append(flat, d*d))
		idx := make([]int, d)
		for i := range idx {
			idx[i] = i * (d + 1)
		}
		x = n.take(x, len(perm), constInts(idx))
		term = string(append(rest, term[p]))
	}
}
