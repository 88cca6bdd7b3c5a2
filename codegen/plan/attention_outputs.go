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

// AttentionAppendedCaches checks the appended caches of attention kernel k, whose plan is p: by
// operand index (1: K, 2: V), the update_slice ops that append the step's rows to a cache (read
// in place, splitkv.Appended). Each must be in place, a cache, rows [B, KVH, T, n] and positions
// in memory, and written by the kernel, and with any of them the kernel writes the attention
// op's result and its appended caches alone. No cache appended: nil (ForwardLSE checks the
// outputs).
func AttentionAppendedCaches(k Kernel, p AttentionPlan) (map[int]*ir.Value, error) {
	op, g := p.Op, k.Graph
	written := map[*ir.Value]bool{}
	for _, o := range g.Outputs {
		written[o.Value] = true
	}
	var appended map[int]*ir.Value
	for i := 1; i <= 2; i++ {
		u, ok := splitkv.Appended(op, i)
		if !ok {
			continue
		}
		if !k.InPlace {
			return nil, fmt.Errorf("attention appends rows to a cache that is not its output's memory (the kernel is not in place)")
		}
		cache, start := u.Args[0], u.Args[2]
		if cache.Op != ir.OpInput || start.Op != ir.OpInput || !u.Args[1].Type.Shape.Equal(ir.Shape{p.B, p.KVH, u.Args[1].Type.Shape[2], u.Type.Shape[3]}) {
			return nil, fmt.Errorf("attention appends %s: want a cache, rows [B, KVH, T, n] and positions in memory", g.Format(u))
		}
		if !written[u] {
			return nil, fmt.Errorf("attention appends %s, which the kernel does not write", g.Format(u))
		}
		if appended == nil {
			appended = map[int]*ir.Value{}
		}
		appended[i] = u
	}
	if appended == nil {
		return nil, nil
	}
	for _, o := range g.Outputs {
		if o.Value != op && o.Value != appended[1] && o.Value != appended[2] {
			return nil, fmt.Errorf("an attention kernel writes the attention op's result and its appended caches alone, not %s", g.Format(o.Value))
		}
	}
	return appended, nil
}
