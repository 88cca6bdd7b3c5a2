package onnx

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Weights are an imported model's initializers, by parameter name. Import checks every one
// (element type, dims against the bytes that hold them, external data's bounds) but converts
// none: a weight stays the bytes it was read as (raw_data, aliasing the model's buffer, or a
// range of an external data file) until Tensor asks for it. Compiling a model therefore never
// holds its weights more than once, and converting them one at a time holds one tensor more.
//
// A Weights is read-only after import and safe for concurrent use: Tensor decodes anew on
// every call.
type Weights struct {
	src tensorSource
	m   map[string]*weight
}

// weight is one initializer: p's bytes, or c when import had to convert it to check it (the
// typed fields, float_data and the like, and external bool data).
type weight struct {
	t ir.Type
	p *onnxpb.TensorProto
	c *tensor.Tensor
}

// Names returns the weights' names, sorted.
func (w *Weights) Names() []string {
	if w == nil {
		return nil
	}
	names := make([]string, 0, len(w.m))
	for n := range w.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Len is the number of weights.
func (w *Weights) Len() int {
	if w == nil {
		return 0
	}
	return len(w.m)
}

// Type returns the type of weight name; ok is false if there is none by that name.
func (w *Weights) Type(name string) (t ir.Type, ok bool) {
	if w == nil || w.m[name] == nil {
		return ir.Type{}, false
	}
	return w.m[name].t, true
}

// Tensor converts weight name to a host tensor (a new one on every call; nil, nil if the model
// has no weight by that name). External data is read now.
func (w *Weights) Tensor(name string) (*tensor.Tensor, error) {
	if w == nil || w.m[name] == nil {
		return nil, nil
	}
	e := w.m[name]
	if e.c != nil {
		return e.c.Clone(), nil
	}
	t, err := w.src.decodeWeight(e.p)
	if err != nil {
		return nil, fmt.Errorf("initializer %q: %w", e.p.GetName(), err)
	}
	return t, nil
}

// Map converts every weight (for the reference interpreter and the executor, which take maps).
func (w *Weights) Map() (map[string]*tensor.Tensor, error) {
	m := map[string]*tensor.Tensor{}
	for _, n := range w.Names() {
		t, err := w.Tensor(n)
		if err != nil {
			return nil, err
		}
		m[n] = t
	}
	return m, nil
}

// initializer checks an initializer without converting its bytes (see Weights); small ones
// and those held in typed fields are converted, as their check needs the values and a shape
// operand may need them.
func (src tensorSource) initializer(p *onnxpb.TensorProto) (*weight, error) {
	t, err := typeOf(p, true)
	if err != nil {
		return nil, err
	}
	w := &weight{t: t, p: p}
	d, n := t.DType, t.Shape.NumElements()
	switch raw := p.GetRawData(); {
	case p.GetDataLocation() == onnxpb.TensorProto_EXTERNAL && d != ir.Bool:
		if _, err := src.externalRange(p, dataBytes(p, t)); err != nil {
			return nil, err
		}
		return w, nil
	case p.GetDataLocation() != onnxpb.TensorProto_EXTERNAL && raw != nil && n > smallWeight:
		if len(raw) != dataBytes(p, t) {
			return nil, fmt.Errorf("%s needs %d bytes of raw_data, has %d", describe(p, t), dataBytes(p, t), len(raw))
		}
		if d == ir.Bool {
			if i := slices.IndexFunc(raw, func(b byte) bool { return b > 1 }); i >= 0 {
				return nil, fmt.Errorf("tensor: bool element %d has byte value %d, want 0 or 1", i, raw[i])
			}
		}
		return w, nil
	}
	if w.c, err = src.decodeWeight(p); err != nil {
		return nil, err
	}
	return w, nil
}

// smallWeight is the most elements an initializer in raw_data may have to be converted at
// import (shape operands, scalars: a few bytes, and known() asks for them).
const smallWeight = 64

// value returns an initializer's value (for a shape operand).
func (src tensorSource) value(w *weight) (*tensor.Tensor, error) {
	if w.c != nil {
		return w.c, nil
	}
	c, err := src.decodeWeight(w.p)
	if err != nil {
		return nil, err
	}
	w.c = c // a shape operand is small; keep it for the next node that asks
	return c, nil
}
