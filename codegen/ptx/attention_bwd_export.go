package ptx

import "github.com/gcomp/gcomp/ir"

// Exported for another producer's attention backward templates (codegen/nvvm), which take the
// same plans and checks as this package's.

// PlanAttentionOp tiles op (attention, attention_lse or attention_grad), whose rows carry ev
// value columns (0: the rows' statistics alone), as this package's templates do.
func PlanAttentionOp(op *ir.Value, ev int) AttentionPlan { return planOf(op, ev) }

// AttentionGradOutputs checks a backward kernel's outputs (op's result alone, or dk and dv of one
// attention) and returns them by wrt.
func AttentionGradOutputs(g *ir.Graph, op *ir.Value) (map[string]*ir.Value, error) {
	return gradOutputs(g, op)
}

// AttentionForwardLSE checks an attention kernel's outputs: att's result and possibly the
// attention_lse of its operands, which it returns (nil without one).
func AttentionForwardLSE(g *ir.Graph, att *ir.Value) (*ir.Value, error) { return forwardLSE(g, att) }

// EmptyOutputs reports whether no output of g has an element (Generate's empty kernel).
func EmptyOutputs(g *ir.Graph) bool { return emptyOutputs(g) }
