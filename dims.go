package gcomp

import (
	"context"
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// A model may leave sizes open until run time (docs/dynamic.md): a .go model traced with
// Options.MaxBatch, an .onnx model whose dynamic axes Options.MaxShapes bounds, a .gir graph or a
// DSL function that declares dims. Its inputs and outputs then have symbolic axes, each an
// expression over the dims ("batch", "batch*seq"); Model.Dims lists the dims' ranges and
// TensorInfo each axis's expression and range. One compiled model runs every size in range: the
// buffers are allocated at the bounds, and Session.Run takes inputs of the run's sizes and
// returns outputs of the sizes they imply.

// Dim is a size a model leaves open until run time: its name and its range [Lo, Hi].
type Dim struct {
	Name string `json:"name"`
	Lo   int    `json:"lo"`
	Hi   int    `json:"hi"`
}

// Dims lists the model's dims in declaration order; nil for a static model.
func (m *Model) Dims() []Dim {
	var ds []Dim
	for _, d := range m.graph.Dims {
		ds = append(ds, Dim{Name: d.Name, Lo: d.Lo, Hi: d.Hi})
	}
	return ds
}

// String prints a static tensor's description as {x f32 [2 3]}, and a symbolic one's with its
// axes' expressions and lower ends: {x f32 [8 3] dims [batch 3] lo [1 3]}.
func (t TensorInfo) String() string {
	if t.Dims == nil {
		return fmt.Sprintf("{%s %s %v}", t.Name, t.DType, t.Shape)
	}
	return fmt.Sprintf("{%s %s %v dims %v lo %v}", t.Name, t.DType, t.Shape, t.Dims, t.Lo)
}

// info describes a tensor of type t in graph g.
func info(g *ir.Graph, name string, t ir.Type) TensorInfo {
	ti := TensorInfo{Name: name, DType: t.DType.String(), Shape: slices.Clone([]int(t.Shape))}
	if t.Sym == nil {
		return ti
	}
	r := g.Ranges()
	for _, e := range t.Sym {
		lo, _, _ := e.Range(r) // the verifier bounded every size in [0, its bound]
		ti.Dims = append(ti.Dims, e.String())
		ti.Lo = append(ti.Lo, int(max(lo, 0)))
	}
	return ti
}

// sizesGraph is what binds a run's sizes for a model with dims: its dims and its inputs under the
// names users give them, so that the runtime's messages (ir.Graph.BindSizes) name them as users
// do. nil for a static model.
func (m *Model) sizesGraph() *ir.Graph {
	if len(m.graph.Dims) == 0 {
		return nil
	}
	g := &ir.Graph{Name: m.graph.Name, Dims: m.graph.Dims}
	for _, v := range m.graph.Inputs() {
		c := *v
		c.Name = m.inputName(v)
		g.Values = append(g.Values, &c)
	}
	return g
}

// bindSizes binds a run's sizes from its inputs (already checked to have the model's dtypes and
// ranks): a size outside its dim's range, inputs that disagree on a dim, or an axis that is not its
// expression's value is the runtime's one error, an ErrShapeMismatch.
func (s *Session) bindSizes(inputs map[string]*Tensor) error {
	if s.sizes == nil {
		return nil
	}
	shapes := make(map[string]ir.Shape, len(inputs))
	for name, t := range inputs {
		shapes[name] = t.typ.Shape
	}
	if _, err := s.sizes.BindSizes(shapes); err != nil {
		return &wrapped{err: fmt.Errorf("gcomp: %v", err), sentinel: ErrShapeMismatch}
	}
	return nil
}

// sameRank is whether have may be a run's value of the symbolic type want: the dtype and the
// number of axes; the sizes are bindSizes' to check.
func sameRank(have, want ir.Type) bool {
	return want.Sym != nil && have.DType == want.DType && len(have.Shape) == len(want.Shape)
}

// runSized runs a model with dims on a compiled device: the executor binds the run's sizes from
// the inputs, picks the specialization that holds them, and returns outputs of those sizes.
// (Memory images, the static path, are at the bounds.)
func runSized(ctx context.Context, p *executor.Program, inputs map[string]*Tensor) (map[string]*Tensor, error) {
	host := make(map[string]*tensor.Tensor, len(inputs))
	for name, t := range inputs {
		host[name] = t.Host()
	}
	res, err := p.RunContext(ctx, host)
	if err != nil {
		return nil, deviceError(err)
	}
	outs := make(map[string]*Tensor, len(res.Outputs))
	for name, t := range res.Outputs {
		outs[name] = FromHost(t)
	}
	return outs, nil
}
