package compiler

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/passes"
)

// A graph with dims is planned at its bounds (the passes see Shapes, which hold them) and its
// kernels run at the sizes of each run. Kernels whose buffers keep symbolic sizes take their
// element count as a parameter; today only flat elementwise loop kernels can (codegen/ptx's
// symloop.go), so any other kernel over symbolic sizes is refused by kind.

// symbolicKernels returns, for a graph with dims, the element count of each kernel whose buffers
// are symbolic (by kernel name), or the error naming the first kernel that cannot run at
// sizes other than the bound.
func symbolicKernels(g *ir.Graph, kg *passes.KernelGraph, producer backend.Producer) (map[string]sym.Expr, error) {
	if len(g.Dims) == 0 {
		return nil, nil
	}
	if _, ok := producer.(backend.PTX); !ok && producer != nil {
		return nil, fmt.Errorf("graph %s has symbolic dims: only the ptx backend compiles them yet", g.Name)
	}
	elems := map[string]sym.Expr{}
	for _, k := range kg.Kernels {
		var names []string
		for _, v := range k.Body.Inputs() {
			names = append(names, v.Name)
		}
		for _, v := range k.Body.Params() {
			names = append(names, v.Name)
		}
		for _, o := range k.Body.Outputs {
			names = append(names, o.Name)
		}
		symbolic, static := "", ""
		for _, n := range names {
			if b := kg.Buffer(n); b != nil && b.Type.Sym != nil {
				symbolic = n
			} else {
				static = n
			}
		}
		if symbolic == "" {
			continue // computes on static buffers only: compiled as always
		}
		if k.Kind != passes.Loop {
			return nil, fmt.Errorf("graph %s has symbolic dims: kernel %s (%s), over symbolic buffer %s, is a %s kernel, and only loop kernels run at symbolic sizes yet",
				g.Name, k.Name, opNames(k.Ops), symbolic, k.Kind)
		}
		if why := ptx.SymbolicLoop(k.Body); why != "" {
			return nil, fmt.Errorf("graph %s has symbolic dims: loop kernel %s (%s): %s; only elementwise loop kernels run at symbolic sizes yet",
				g.Name, k.Name, opNames(k.Ops), why)
		}
		if static != "" {
			return nil, fmt.Errorf("internal error: kernel %s: buffer %s has no symbolic sizes beside %s", k.Name, static, symbolic)
		}
		n := sym.Const(1)
		for _, e := range kg.Buffer(k.Body.Outputs[0].Name).Type.Sym {
			n = sym.Mul(n, e)
		}
		if n.Overflowed() {
			return nil, fmt.Errorf("kernel %s: its element count overflows", k.Name)
		}
		elems[k.Name] = n
	}
	return elems, nil
}

// atBound is a symbolic kernel's body as codegen/ptx takes it: its buffers' types at their
// bounds (the body keeps the buffers' symbolic sizes, which it has no dims to verify).
func atBound(body *ir.Graph) *ir.Graph {
	c := body.Clone()
	for _, v := range c.Values {
		v.Type.Sym = nil
	}
	return c
}

// planDims records the dims and the symbolic sizes of the inputs and outputs in plan.
func planDims(plan *artifact.Plan, g *ir.Graph, kg *passes.KernelGraph) {
	if len(g.Dims) == 0 {
		plan.Version = artifact.StaticVersion
		return
	}
	for _, d := range g.Dims {
		plan.Dims = append(plan.Dims, artifact.Dim{Name: d.Name, Lo: d.Lo, Hi: d.Hi})
	}
	// The memory plan's types are the symbolic ones; the plan's are the bounds, beside Sym.
	plan.Inputs, plan.Outputs = slices.Clone(plan.Inputs), slices.Clone(plan.Outputs)
	for _, set := range [][]artifact.IOBuffer{plan.Inputs, plan.Outputs} {
		for i := range set {
			b := kg.Buffer(set[i].Name)
			if b == nil || b.Type.Sym == nil {
				continue
			}
			set[i].Type = ir.Type{DType: b.Type.DType, Shape: b.Type.Shape}.String()
			set[i].Sym = make([]string, len(b.Type.Sym))
			for j, e := range b.Type.Sym {
				set[i].Sym[j] = e.String()
			}
		}
	}
}
