package executor

import (
	"fmt"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/tensor"
)

// sizes is the state of a program whose plan has dims (version 4): its buffers are allocated at
// the bounds, and each run binds the sizes from its inputs (ir.Graph.BindSizes' rules, on the
// plan's source graph), passes each symbolic kernel its size (an element count, or its rows in
// its template's unit) and computes its grid (artifact.Work). Inputs are written, and outputs
// read, contiguous at the run's sizes: the symbolic kernels are elementwise over the linear
// index, or compute the first rows of buffers whose symbolic dims lead, so that layout is theirs.
type sizes struct {
	graph *ir.Graph
	exprs map[string]sym.Expr   // each size expression of the plan, by its text
	axes  map[string][]sym.Expr // input and output buffers → their axes' sizes
	env   map[string]int64      // the current run's sizes
}

// loadSizes prepares a program whose plan has dims; nothing for a static plan.
func (p *Program) loadSizes() error {
	if len(p.plan.Dims) == 0 {
		return nil
	}
	g, err := p.plan.SourceGraph()
	if err != nil {
		return err
	}
	s := &sizes{graph: g, exprs: map[string]sym.Expr{}, axes: map[string][]sym.Expr{}}
	parse := func(text string) (sym.Expr, error) {
		e, err := p.plan.ParseSize(text)
		s.exprs[text] = e
		return e, err
	}
	for _, set := range [][]artifact.IOBuffer{p.plan.Inputs, p.plan.Outputs} {
		for _, b := range set {
			for _, text := range b.Sym {
				e, err := parse(text)
				if err != nil {
					return fmt.Errorf("launch plan: %s: %v", b.Name, err)
				}
				s.axes[b.Name] = append(s.axes[b.Name], e)
			}
		}
	}
	plans := []*artifact.Plan{p.plan}
	if p.vars != nil {
		plans = p.vars.plans
	}
	for _, q := range plans {
		for _, k := range q.Kernels {
			for _, a := range k.Args {
				if a.Kind == artifact.ArgSize {
					if _, err := parse(a.Expr); err != nil {
						return fmt.Errorf("launch plan: kernel %s: %v", k.Name, err)
					}
				}
			}
		}
	}
	p.sz = s
	return nil
}

// bindSizes binds the run's sizes from its inputs: each out of range, or disagreeing, is one
// error naming the input, the dim and the range.
func (p *Program) bindSizes(inputs map[string]*tensor.Tensor) error {
	if p.sz == nil {
		return nil
	}
	shapes := map[string]ir.Shape{}
	for name, t := range inputs {
		if t != nil {
			shapes[name] = t.Type.Shape
		}
	}
	env, err := p.sz.graph.BindSizes(shapes)
	if err != nil {
		return err
	}
	for _, d := range p.plan.Dims {
		if _, ok := env[d.Name]; !ok && len(inputs) > 0 {
			// No input gives it (a missing input is checkTypes' error): keep the run at the bound.
			env[d.Name] = int64(d.Hi)
		}
	}
	p.sz.env = env
	return p.chooseVariant()
}

// runType is the type of the input or output buffer b at the current run's sizes.
func (p *Program) runType(b *buffer) ir.Type {
	if p.sz == nil || p.sz.env == nil || p.sz.axes[b.name] == nil {
		return b.typ
	}
	t := b.typ
	t.Shape = make(ir.Shape, len(t.Shape))
	for i, e := range p.sz.axes[b.name] {
		n, _ := e.Eval(p.sz.env) // bound and validated: in [0, the bound]
		t.Shape[i] = int(n)
	}
	return t
}

// size is the value of a size argument at the current run's sizes.
func (p *Program) size(a artifact.Arg) int64 {
	n, _ := p.sz.exprs[a.Expr].Eval(p.sz.env)
	return n
}

// grid is kernel k's grid at the current run's sizes.
func (p *Program) grid(k artifact.Kernel) [3]int {
	if k.Work == nil || p.sz == nil {
		return k.Grid
	}
	return k.Work.Grid(p.size(artifact.Arg{Expr: k.Work.Elements}), k.Grid, k.Block)
}

// staticOnly refuses what runs at the bound only (prefetched inputs, memory images) for a
// program whose plan has dims.
func (p *Program) staticOnly(what string) error {
	if p.sz != nil {
		return fmt.Errorf("%s: the model has symbolic dims; pass its inputs to Run", what)
	}
	return nil
}
