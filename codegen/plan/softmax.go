package plan

import "github.com/gcomp/gcomp/ir"

// OnlineSoftmaxPairs finds softmax's two reductions: m = reduce_max(x) and
// s = reduce_sum(exp(x − broadcast(m))) over the same f32 x, with s not an output. They fold in
// one pass over the row in codegen/ptx's row template (online: the running sum is rescaled
// whenever the running max grows), which a fold over scattered axes does not take.
func OnlineSoftmaxPairs(g *ir.Graph, reds []*ir.Value) map[*ir.Value]*ir.Value {
	pairs := map[*ir.Value]*ir.Value{}
	outs := map[*ir.Value]bool{}
	for _, o := range g.Outputs {
		outs[o.Value] = true
	}
	for _, s := range reds {
		e := s.Args[0]
		if s.Op != "reduce_sum" || outs[s] || e.Op != "exp" || e.Type.DType != ir.F32 {
			continue
		}
		d := e.Args[0]
		if d.Op != "sub" || d.Args[1].Op != "broadcast_in_dim" {
			continue
		}
		m := d.Args[1].Args[0]
		for m.Op == "reshape" {
			m = m.Args[0]
		}
		if m.Op == "reduce_max" && m.Args[0] == d.Args[0] && pairs[m] == nil {
			pairs[m] = s
		}
	}
	return pairs
}
