package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Layers of a stacked input at symbolic sizes. A stage of a persistent kernel may read one layer
// of an input [layers, batch, hidden] (an RNN's initial state): a slice that cuts only the
// static dims leading the input's rows and keeps the rest whole, one contiguous block of the
// input that starts, at the run's sizes, LayerOffset elements in (l·batch·hidden for layer l),
// where the bound's code would find it at l·bound·hidden. The compiler gives such a stage the
// stacked input's symbolic sizes (Kernel.Sizes) once it has checked the view (its symlayer.go);
// the stage then reads the view as an input of its own, of the slice's type at the bound, from
// the input's address plus the offset, a .u32 parameter of the kernel (ArgSize, its Expr the
// offset's expression). The compiler keeps the offset a multiple of 16 bytes, so vector loads
// stay aligned.

// A stage's output may be stacked too (h_n, the layers' last states): a concat along a static
// dim leading the output's rows, used only as the output, whose sizes Kernel.Sizes holds, is
// stored as its operands, each a layer of the output at its offset (layerOutputs).

// A row loop kernel (symloop.go) reads and writes layers the same way: its graph is rewritten
// once its buffers' addresses are loaded (layerKernel), its offsets' parameters before its size.

// LayerOffset is the element offset of the slice starting at start of a value whose sizes are
// sizes (expressions over the dims): Σ start[i]·∏_{j>i} sizes[j].
func LayerOffset(start []int, sizes []sym.Expr) sym.Expr { return plan.LayerOffset(start, sizes) }

// layerViews rewrites sg, stage st's graph cloned (value for value), for the stage's layer
// views: each slice of an input whose sizes st.Sizes holds becomes an input of the slice's type
// whose address (in gn.ptr) is the input's plus the slice's offset at the run's sizes, loaded
// from a parameter of persistent kernel name (recorded in args).
func (gn *gen) layerViews(name string, st Kernel, sg *ir.Graph, args *[]Arg) {
	if st.Sizes == nil {
		return
	}
	orig := originals(st, sg)
	for _, v := range sg.Values {
		if v.Op != "slice" || len(v.Args) != 1 || v.Args[0].Op != ir.OpInput {
			continue
		}
		in := v.Args[0]
		sizes, ok := st.Sizes[orig[in]]
		if !ok {
			continue
		}
		r, ok := gn.layerAt(name, args, gn.ptr[in], LayerOffset(v.Attrs.Ints("start"), sizes), v.Type.DType, "a layer of "+in.Name)
		if !ok {
			continue // a prefix of the rows, where the bound's code reads it
		}
		v.Op, v.Args, v.Attrs, v.Name = ir.OpInput, nil, nil, in.Name
		gn.ptr[v] = r
	}
}

// layerOutputs rewrites the outputs of sg (stage st's graph cloned, its outputs' addresses in
// gn.outPtr) that are concats whose sizes st.Sizes holds: each operand becomes an output of its
// own at the output's address plus the operand's offset at the run's sizes.
func (gn *gen) layerOutputs(name string, st Kernel, sg *ir.Graph, args *[]Arg) {
	if st.Sizes == nil {
		return
	}
	orig := originals(st, sg)
	var (
		outs []ir.Output
		ptrs []string
	)
	for i, o := range sg.Outputs {
		v := o.Value
		sizes, ok := st.Sizes[orig[v]]
		if v.Op != "concat" || !ok {
			outs, ptrs = append(outs, o), append(ptrs, gn.outPtr[i])
			continue
		}
		axis := v.Attrs.Int("axis", 0)
		start := make([]int, v.Type.Shape.Rank())
		for _, a := range v.Args {
			r, ok := gn.layerAt(name, args, gn.outPtr[i], LayerOffset(start, sizes), v.Type.DType, "layer "+fmt.Sprint(start[axis])+" of "+o.Name)
			if !ok {
				r = gn.outPtr[i]
			}
			outs, ptrs = append(outs, ir.Output{Name: o.Name, Value: a}), append(ptrs, r)
			start[axis] += a.Type.Shape[axis]
		}
	}
	sg.Outputs, gn.outPtr = outs, ptrs
}

// originals maps the values of sg, a clone of st's graph, to st's.
func originals(st Kernel, sg *ir.Graph) map[*ir.Value]*ir.Value {
	orig := make(map[*ir.Value]*ir.Value, len(sg.Values))
	for i, v := range sg.Values {
		orig[v] = st.Graph.Values[i]
	}
	return orig
}

// layerAt returns a register holding address base plus off elements of dtype d, off evaluated
// at the run's sizes from a parameter of persistent kernel name (recorded in args), with a note
// naming what; false when off is 0 (no parameter, base as it is).
func (gn *gen) layerAt(name string, args *[]Arg, base string, off sym.Expr, d ir.DType, what string) (string, bool) {
	if c, ok := off.IsConst(); ok && c == 0 {
		return "", false
	}
	b := gn.e.b
	p := b.param("u32", fmt.Sprintf("%s_param_%d", name, len(*args)))
	*args = append(*args, Arg{Kind: ArgSize, Expr: off.String()})
	n := b.reg(rU32)
	b.ins("ld.param.u32", n, "["+p+"]")
	b.note("%s at %s elements: parameter %d", what, off, len(*args)-1)
	bytes, r := b.reg(rU64), b.reg(rU64)
	b.ins("mul.wide.u32", bytes, n, imm(d.Size()))
	b.ins("add.s64", r, base, bytes)
	if gn.sharedPtr[base] {
		gn.sharedPtr[r] = true
	}
	return r, true
}

// layerSized reports whether k's Sizes are those of its layers only (plan.LayerSized).
func layerSized(k Kernel) bool { return plan.LayerSized(k) }

// layerKernel rewrites the graph of row loop kernel k (layerSized) for its layers: k's graph
// cloned, the buffers' addresses moved to the clone's values, its layer views and outputs
// rewritten (layerViews, layerOutputs; their offsets' parameters recorded in args).
func (gn *gen) layerKernel(k Kernel, args *[]Arg) *ir.Graph {
	sg := k.Graph.Clone()
	for v, o := range originals(k, sg) {
		if r, ok := gn.ptr[o]; ok {
			gn.ptr[v] = r
		}
	}
	gn.layerViews(k.Name, k, sg, args)
	gn.layerOutputs(k.Name, k, sg, args)
	gn.kernelGraph = sg
	return sg
}
