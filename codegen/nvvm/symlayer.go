package nvvm

import (
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Layers of stacked buffers at symbolic sizes, as codegen/ptx's symlayer.go. A row loop kernel
// or a persistent kernel's symbolic stage whose Sizes are its layers' (plan.LayerSized) reads a
// slice of an input that cuts only the static dims leading its rows as an input of its own, at
// the input's address plus the slice's offset at the run's sizes (plan.LayerOffset:
// l·batch·hidden for layer l, where the bound's code would find it at l·bound·hidden), and
// stores a concat used only as an output as its operands, each at the output's address plus its
// offset. Each nonzero offset is an i32 parameter (plan.ArgSize, its Expr the offset's
// expression) in codegen/ptx's order: a loop kernel's after the buffers, before its size; a
// persistent stage's views' then its outputs', before the stage's size. The compiler keeps the
// offsets multiples of 16 bytes, so the groups' alignment holds at the offset addresses.

// layers hands out the addresses of layers. Recording (kg nil), it lists each nonzero offset as
// a parameter (args), for the kernel's declaration; building, it takes the offsets' parameters
// (params) in the same order.
type layers struct {
	kg     *kgen
	args   []plan.Arg
	params []value.Value
}

// layerParams is the layers of kg, declared with args: its parameters holding offsets.
func (kg *kgen) layerParams(args []plan.Arg) *layers {
	l := &layers{kg: kg}
	for i, a := range args {
		if a.Kind == plan.ArgSize && a.Expr != "" {
			l.params = append(l.params, kg.f.Params[i])
		}
	}
	return l
}

// at is the address off elements of dtype d past base (base itself at offset 0, no parameter).
func (l *layers) at(base value.Value, off sym.Expr, d irg.DType) value.Value {
	if c, ok := off.IsConst(); ok && c == 0 {
		return base
	}
	if l.kg == nil {
		l.args = append(l.args, plan.Arg{Kind: plan.ArgSize, Expr: off.String()})
		return nil
	}
	n := l.params[0]
	l.params = l.params[1:]
	b := l.kg.b
	p := b.NewGetElementPtr(memType(d), base, b.NewZExt(n, types.I64))
	p.InBounds = true
	return p
}

// layerViews rewrites sg, st's graph cloned (value for value), for st's layer views: each slice
// of an input whose sizes st.Sizes holds, at a nonzero offset, becomes an input of the slice's
// type whose pointer (in ptr) is the input's at the slice's offset.
func layerViews(st plan.Kernel, sg *irg.Graph, ptr map[*irg.Value]value.Value, l *layers) {
	if st.Sizes == nil {
		return
	}
	orig := originals(st, sg)
	for _, v := range sg.Values {
		if v.Op != "slice" || len(v.Args) != 1 || v.Args[0].Op != irg.OpInput {
			continue
		}
		in := v.Args[0]
		sizes, ok := st.Sizes[orig[in]]
		if !ok {
			continue
		}
		off := plan.LayerOffset(v.Attrs.Ints("start"), sizes)
		if c, ok := off.IsConst(); ok && c == 0 {
			continue // a prefix of the rows, where the bound's code reads it
		}
		ptr[v] = l.at(ptr[in], off, v.Type.DType)
		v.Op, v.Args, v.Attrs, v.Name = irg.OpInput, nil, nil, in.Name
	}
}

// layerOutputs rewrites the outputs of sg (st's graph cloned, the outputs' pointers ptrs) that
// are concats whose sizes st.Sizes holds: each operand becomes an output of its own at the
// output's pointer plus the operand's offset. It returns the outputs' pointers.
func layerOutputs(st plan.Kernel, sg *irg.Graph, ptrs []value.Value, l *layers) []value.Value {
	if st.Sizes == nil {
		return ptrs
	}
	orig := originals(st, sg)
	var (
		outs  []irg.Output
		nptrs []value.Value
	)
	for i, o := range sg.Outputs {
		v := o.Value
		sizes, ok := st.Sizes[orig[v]]
		if v.Op != "concat" || !ok {
			outs, nptrs = append(outs, o), append(nptrs, ptrs[i])
			continue
		}
		axis := v.Attrs.Int("axis", 0)
		start := make([]int, v.Type.Shape.Rank())
		for _, a := range v.Args {
			outs = append(outs, irg.Output{Name: o.Name, Value: a})
			nptrs = append(nptrs, l.at(ptrs[i], plan.LayerOffset(start, sizes), v.Type.DType))
			start[axis] += a.Type.Shape[axis]
		}
	}
	sg.Outputs = outs
	return nptrs
}

// originals maps the values of sg, a clone of st's graph, to st's.
func originals(st plan.Kernel, sg *irg.Graph) map[*irg.Value]*irg.Value {
	orig := make(map[*irg.Value]*irg.Value, len(sg.Values))
	for i, v := range sg.Values {
		orig[v] = st.Graph.Values[i]
	}
	return orig
}

// layerArgs is the offsets' parameters of row loop kernel k (plan.LayerSized), and its graph
// rewritten for its layers (whose first output's shape is the kernel's space).
func layerArgs(k plan.Kernel) ([]plan.Arg, *irg.Graph) {
	rec := &layers{}
	sg := k.Graph.Clone()
	layerViews(k, sg, map[*irg.Value]value.Value{}, rec)
	layerOutputs(k, sg, make([]value.Value, len(sg.Outputs)), rec)
	return rec.args, sg
}

// layerKernel rewrites kg's graph (row loop kernel k's, declared with args) for its layers: k's
// graph cloned, the buffers' pointers and the gathers' sites moved to the clone's values, its
// layer views and outputs rewritten.
func (kg *kgen) layerKernel(k plan.Kernel, args []plan.Arg) {
	sg := k.Graph.Clone()
	for v, o := range originals(k, sg) {
		if p, ok := kg.ptr[o]; ok {
			kg.ptr[v] = p
		}
		if s, ok := kg.sites[o]; ok {
			kg.sites[v] = s
		}
	}
	l := kg.layerParams(args)
	layerViews(k, sg, kg.ptr, l)
	kg.outPtr = layerOutputs(k, sg, kg.outPtr, l)
	kg.g = sg
}
