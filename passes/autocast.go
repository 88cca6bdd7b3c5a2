package passes

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Autocast is torch.autocast's op choice for contractions, shared by inference (Options.AMP,
// compiler.Options.AMP) and the train step: each f32 dot_general and conv2d (a transposed
// convolution is a conv2d), attention and attention_grad (torch's scaled_dot_product_attention)
// runs in a low dtype with f32 accumulation and everything else stays f32. Casting a weight is parameter-only work, which the bindtime pass runs once per binding.

// ParseAMP reads an autocast dtype as the command line and the train options spell it: "" is
// none (ir.Invalid), "bf16" and "f16" the low dtypes.
func ParseAMP(s string) (ir.DType, error) {
	switch s {
	case "":
		return ir.Invalid, nil
	case "bf16":
		return ir.BF16, nil
	case "f16":
		return ir.F16, nil
	}
	return ir.Invalid, fmt.Errorf("unknown AMP dtype %q (want bf16 or f16)", s)
}

// AutocastGraph returns what the pipeline computes under --amp dt: a copy of g with its attention
// decompositions formed into attention ops (the attention pass's rewrite, which the pipeline runs
// before autocast unless the pass is disabled) and Autocast(dt) applied; or g itself when dt is
// ir.Invalid (no autocast) or g has no f32 contraction.
func AutocastGraph(g *ir.Graph, dt ir.DType) *ir.Graph {
	if dt == ir.Invalid || !hasF32Contraction(g) {
		return g
	}
	c := findAttention(g.Clone())
	Autocast(c, dt)
	return c
}

// Autocast runs every f32 dot_general and conv2d of g in dt, as torch.autocast does: the
// operands are cast to dt, the contraction computes in dt (accumulating in f32 on tensor cores:
// mma.sync with f32 accumulators, rounded once to dt at the store; the reference accumulates in
// f64 and rounds once) and its result is cast back to f32 for what follows. Reductions,
// softmax, norms, losses and optimizers are untouched and stay f32, and so are integer values;
// the weights stay f32 (each is cast once, however many contractions read it). Contractions
// already in dt are left alone, so applying it twice changes nothing. It returns, for each
// contraction, the f32 value that now stands for its result (gradients a caller holds).
func Autocast(g *ir.Graph, dt ir.DType) map[*ir.Value]*ir.Value {
	low := map[*ir.Value]*ir.Value{}  // f32 value → its dt cast
	back := map[*ir.Value]*ir.Value{} // contraction → the f32 cast of its result
	var out, fresh []*ir.Value
	mk := func(v *ir.Value) *ir.Value {
		fresh = append(fresh, v)
		out = append(out, v)
		return v
	}
	for _, v := range g.Values {
		for i, a := range v.Args {
			if b := back[a]; b != nil {
				v.Args[i] = b
			}
		}
		if !isF32Contraction(v) {
			sinkCast(v, dt, mk) // autocast_symviews.go
			out = append(out, v)
			continue
		}
		for i, a := range v.Args {
			if a.Type.DType != ir.F32 || v.Attrs.Bool("lse", false) && i == len(v.Args)-1 {
				continue // attention's positions (integers) and attention_grad's lse stay
			}
			l := low[a]
			if l == nil {
				l = lowDequantize(a, dt, low, mk)
			}
			if l == nil {
				l = lowViews(a, dt, low, mk) // autocast_symconv.go
			}
			if l == nil {
				l = mk(&ir.Value{Op: "cast", Type: retype(a.Type, dt), Attrs: ir.Attrs{"to": dt}, Args: []*ir.Value{a}, Pos: v.Pos})
			}
			low[a] = l
			v.Args[i] = l
		}
		f32 := v.Type
		v.Type = retype(f32, dt)
		out = append(out, v)
		back[v] = mk(&ir.Value{Op: "cast", Type: f32, Attrs: ir.Attrs{"to": ir.F32}, Args: []*ir.Value{v}, Pos: v.Pos})
	}
	for i, o := range g.Outputs {
		if b := back[o.Value]; b != nil {
			g.Outputs[i].Value = b
		}
	}
	// Give the new values IDs (Append puts them at the end), then restore the order.
	for _, v := range fresh {
		g.Append(v)
	}
	g.Values = out
	return back
}

func isF32Contraction(v *ir.Value) bool {
	return (v.Op == "dot_general" || v.Op == "conv2d" || v.Op == ops.AttentionOp || v.Op == ops.AttentionGradOp) && v.Type.DType == ir.F32
}

func hasF32Contraction(g *ir.Graph) bool {
	for _, v := range g.Values {
		if isF32Contraction(v) {
			return true
		}
	}
	return false
}

// retype is t in dtype dt, its symbolic sizes kept (a graph over a symbolic batch).
func retype(t ir.Type, dt ir.DType) ir.Type {
	return ir.Type{DType: dt, Shape: t.Shape.Clone(), Sym: slices.Clone(t.Sym)}
}
