package plan

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// ForwardLSE checks the outputs of an attention kernel: attention op att's result, and possibly
// the attention_lse of the same operands, which it returns (nil without one). The CUDA-core and
// tensor-core templates write it; the split-KV one does not.
func ForwardLSE(g *ir.Graph, att *ir.Value) (*ir.Value, error) {
	var lse *ir.Value
	seen := false
	for _, o := range g.Outputs {
		switch v := o.Value; {
		case v == att && !seen:
			seen = true
		case v.Op == ops.AttentionLSEOp && lse == nil && ops.LSEOf(v, att):
			lse = v
		default:
			return nil, fmt.Errorf("an attention kernel writes the attention op's result and the log-sum-exp of its rows alone")
		}
	}
	if !seen {
		return nil, fmt.Errorf("an attention kernel writes the attention op's result")
	}
	if _, decode := splitkv.Of(att); lse != nil && decode {
		return nil, fmt.Errorf("the split-KV attention template does not write the log-sum-exp")
	}
	return lse, nil
}

// GradOutputs checks the outputs of a backward kernel whose op is op: op's result alone, or dk and
// dv of one attention (ops.GradPair), which the dk/dv template computes together. It returns the
// outputs' values by wrt.
func GradOutputs(g *ir.Graph, op *ir.Value) (map[string]*ir.Value, error) {
	outs := map[string]*ir.Value{op.Attrs.String("wrt", ""): op}
	switch {
	case len(g.Outputs) == 1 && g.Outputs[0].Value == op:
		return outs, nil
	case len(g.Outputs) == 2 && ops.GradPair(g.Outputs[0].Value, g.Outputs[1].Value):
		for _, o := range g.Outputs {
			outs[o.Value.Attrs.String("wrt", "")] = o.Value
		}
		return outs, nil
	}
	return nil, fmt.Errorf("an attention backward kernel writes its %s op's result alone, or dk and dv of one attention", op.Op)
}

// EmptyOutputs reports whether no output of g has an element (the producers' empty kernel).
func EmptyOutputs(g *ir.Graph) bool {
	for _, o := range g.Outputs {
		if o.Value.Type.Shape.NumElements() > 0 {
			return false
		}
	}
	return true
}
