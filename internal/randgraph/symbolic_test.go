package randgraph_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/internal/randgraph"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
)

// Symbolic graphs verify and have dims; outside the refused op, a concat along the rows (or tanh
// over it, or its row sum) and a batched product (and its operand, and a mask of the run's sizes
// broadcast to it and added), every value's symbolic dims lead its shape with one row count;
// products q·kᵀ by hand (M and N the rows' second dim) and masks broadcast to them are drawn;
// each refusal is drawn, as an output, and no graph in the class has one; the same seed gives the
// same graph.
func TestSymbolic(t *testing.T) {
	seen, nonLeading, contracts, concats, fused, summed, scores, masks := map[string]int{}, 0, 0, 0, 0, 0, 0, 0
	for seed := range uint64(300) {
		g, refused := randgraph.Symbolic(rand.New(rand.NewPCG(seed, 27)))
		again, _ := randgraph.Symbolic(rand.New(rand.NewPCG(seed, 27)))
		if g.String() != again.String() {
			t.Fatalf("seed %d: two graphs", seed)
		}
		if err := ops.Verify(g); err != nil || len(g.Dims) == 0 {
			t.Fatalf("seed %d: %v, dims %v\n%s", seed, err, g.Dims, g)
		}
		seen[refused]++
		var rows string
		found := false
		last := g.Outputs[len(g.Outputs)-1].Value
		var contract, epi *ir.Value // a product batched over the rows' first dim, a mask added to it
		for _, o := range g.Outputs {
			v := o.Value
			if v.Op == "add" && v.Args[0].Op == "dot_general" && len(v.Args[0].Attrs.Ints("lhs_batch")) > 0 {
				epi, v = v, v.Args[0]
				if b := epi.Args[1]; b.Op != "broadcast_in_dim" || b.Args[0].Op != ir.OpInput || b.Args[0].Type.Sym == nil || !slices.EqualFunc(b.Type.Sym, v.Type.Sym, sym.Expr.Equal) {
					t.Errorf("seed %d: %s is no mask of the run's sizes broadcast to the product's", seed, g.FormatAt(b))
				}
				masks++
			}
			if v.Op == "dot_general" && len(v.Attrs.Ints("lhs_batch")) > 0 {
				contract = v
				contracts++
				if slices.Equal(v.Attrs.Ints("rhs_contract"), []int{2}) {
					scores++ // q·kᵀ by hand: M and N the rows' second dim
					if v.Type.Sym[1].String() != v.Type.Sym[2].String() || v.Type.Sym[1].String() != v.Args[0].Type.Sym[1].String() {
						t.Errorf("seed %d: %s does not have the rows' second dim as M and N", seed, g.FormatAt(v))
					}
				}
			}
		}
		for _, v := range g.Values {
			concat := last // a concat along the rows, or tanh or a row sum over one
			if concat.Op == "tanh" || concat.Op == "reduce_sum" && concat.Args[0].Op == "concat" {
				concat = concat.Args[0]
			}
			if v == last && (refused != "" || concat.Op == "concat") {
				found = v.Op == refused
				if refused == "" {
					concats++
				}
				if v != concat && v.Op == "tanh" {
					fused++
				}
				if v != concat && v.Op == "reduce_sum" {
					summed++
				}
				continue // the refusal, or a concat along the rows (twice them)
			}
			if v == concat && concat.Op == "concat" {
				continue
			}
			if contract != nil && (v == contract || v == contract.Args[0]) || epi != nil && (v == epi || v == epi.Args[1]) {
				continue
			}
			if v.Op == ir.OpParam || v.Op == ir.OpInput || v.Type.Sym == nil {
				continue
			}
			// Its rows: every dim up to its last symbolic one (static ones before it: [s, n, d]).
			p := 0
			for i, e := range v.Type.Sym {
				if _, c := e.IsConst(); !c {
					p = i + 1
				}
			}
			row := sym.Const(1)
			for _, e := range v.Type.Sym[:p] {
				row = sym.Mul(row, e)
			}
			if p == 0 || p > 2 || p == 2 && slices.ContainsFunc(v.Type.Sym[:1], func(e sym.Expr) bool { _, c := e.IsConst(); return !c }) {
				t.Errorf("seed %d: %s does not lead with its rows (or one static dim before them)", seed, g.FormatAt(v))
			}
			if p == 2 {
				nonLeading++
			}
			if r := row.String(); rows == "" {
				rows = r
			} else if r != rows {
				t.Errorf("seed %d: %s has rows %s, others %s", seed, g.FormatAt(v), r, rows)
			}
		}
		if refused != "" && !found {
			t.Errorf("seed %d: refused %s is not the last output\n%s", seed, refused, g)
		}
	}
	if contracts < 10 {
		t.Errorf("%d batched products contracting a symbolic dim in 300 graphs", contracts)
	}
	if scores < 10 || masks < 5 {
		t.Errorf("%d products q·kᵀ by hand, %d with a broadcast mask added, in 300 graphs", scores, masks)
	}
	if concats < 10 {
		t.Errorf("a concat along the rows drawn %d times in 300", concats)
	}
	if fused < 5 {
		t.Errorf("a concat along the rows under tanh drawn %d times in 300", fused)
	}
	if summed < 5 {
		t.Errorf("a concat along the rows summed over its rows drawn %d times in 300", summed)
	}
	if nonLeading < 50 {
		t.Errorf("%d values with a static dim before their symbolic one in 300 graphs", nonLeading)
	}
	for _, r := range append(randgraph.Refusals(), "") {
		if seen[r] < 10 {
			t.Errorf("%q drawn %d times in 300", r, seen[r])
		}
	}
}
