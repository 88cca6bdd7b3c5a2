package load

import (
	"errors"
	"fmt"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

// A .go model traced at a batch B other than its own (Options.Batch) is traced twice, at B and at
// B+1, and the two graphs must be the same graph up to the batch: the same values with the same
// ops, operands and dtypes, and every dim either the same in both (it does not carry the batch)
// or k·B in one and k·(B+1) in the other, for one integer k (it carries the batch, perhaps merged
// with other dims, as in x.View(-1, C)). Parameters must not carry the batch. A model that fixes
// the batch somewhere (x.View(64, 784), a constant of 64 rows added to the batch) either fails to
// trace at one of the two batches, or builds a dim that is not a multiple of the batch, or one
// that does not follow it; the error names the model line that built it. Tracing symbolically
// would need every shape rule of the DSL over symbolic sizes; two traces reuse the DSL as it is.

// goBatched loads a .go model at opt.Batch (its own batch if 0).
// It returns the graph and the batch it was traced at (0 if the model declares none).
func goBatched(filename string, src []byte, opt Options) (*ir.Graph, int, error) {
	if opt.Batch == 0 {
		return goSource(filename, src, opt)
	}
	if opt.Batch < 0 || opt.Batch >= ir.MaxElements {
		return nil, 0, fmt.Errorf("%s: batch %d out of range", filename, opt.Batch)
	}
	g, _, err := goSource(filename, src, opt)
	if err != nil {
		// A mistake at batch B that the file's own batch does not make is the batch's doing.
		own := opt
		own.Batch = 0
		if lineError(err) != nil && !errors.Is(err, frontend.ErrNoBatch) {
			if _, _, ownErr := goSource(filename, src, own); ownErr == nil {
				return nil, 0, batchError(err, fmt.Sprintf("at batch %d, while the model's own batch builds: this line fixes the batch", opt.Batch))
			}
		}
		return nil, 0, err
	}
	probe := opt
	probe.Batch = opt.Batch + 1
	g2, _, err := goSource(filename, src, probe)
	if err != nil {
		return nil, 0, batchError(err, fmt.Sprintf("at batch %d, traced besides %d to check that the graph follows the batch: this line fixes the batch", probe.Batch, opt.Batch))
	}
	if err := followsBatch(g, g2, opt.Batch, probe.Batch); err != nil {
		if err.Pos == "" {
			err.Pos = filename
		}
		return nil, 0, err
	}
	return g, opt.Batch, nil
}

// lineError returns err's *frontend.Error if it names a model line.
func lineError(err error) *frontend.Error {
	var fe *frontend.Error
	if errors.As(err, &fe) && fe.Pos != "" {
		return fe
	}
	return nil
}

// batchError adds why to the message of a model error that names a line.
func batchError(err error, why string) error {
	fe := lineError(err)
	if fe == nil {
		return err
	}
	return &frontend.Error{Pos: fe.Pos, Msg: fe.Msg + " (" + why + ")", Err: fe.Err}
}

// followsBatch checks that g1, traced at batch b1, and g2, traced at b2, are one graph up to the
// batch (see the comment at the top of this file).
func followsBatch(g1, g2 *ir.Graph, b1, b2 int) *frontend.Error {
	if len(g1.Values) != len(g2.Values) || len(g1.Outputs) != len(g2.Outputs) {
		return &frontend.Error{Msg: fmt.Sprintf("the graph's structure depends on the batch: %d values at batch %d, %d at batch %d",
			len(g1.Values), b1, len(g2.Values), b2)}
	}
	index := make(map[*ir.Value]int, len(g1.Values))
	for i, v := range g1.Values {
		index[v] = i
	}
	index2 := make(map[*ir.Value]int, len(g2.Values))
	for i, v := range g2.Values {
		index2[v] = i
	}
	for i, v := range g1.Values {
		w := g2.Values[i]
		fail := func(format string, args ...any) *frontend.Error {
			return &frontend.Error{Pos: v.Pos, Msg: fmt.Sprintf(format, args...)}
		}
		same := v.Op == w.Op && v.Name == w.Name && len(v.Args) == len(w.Args)
		for j := 0; same && j < len(v.Args); j++ {
			same = index[v.Args[j]] == index2[w.Args[j]]
		}
		if !same {
			return fail("the graph's structure depends on the batch: %s at batch %d, %s at batch %d", describe(v), b1, describe(w), b2)
		}
		if v.Type.DType != w.Type.DType || len(v.Type.Shape) != len(w.Type.Shape) {
			return fail("%s: the type depends on the batch: %s at batch %d, %s at batch %d", describe(v), v.Type, b1, w.Type, b2)
		}
		for d, n1 := range v.Type.Shape {
			n2 := w.Type.Shape[d]
			if n1 == n2 {
				continue
			}
			if v.Op == ir.OpParam {
				return fail("parameter %s: its shape depends on the batch: %s at batch %d, %s at batch %d", v.Name, v.Type, b1, w.Type, b2)
			}
			if n1%b1 != 0 || n2%b2 != 0 || n1/b1 != n2/b2 {
				return fail("%s: dim %d is %d at batch %d and %d at batch %d, not a fixed multiple of the batch: this line fixes the batch",
					describe(v), d, n1, b1, n2, b2)
			}
		}
	}
	for i, o := range g1.Outputs {
		o2 := g2.Outputs[i]
		if o.Name != o2.Name || index[o.Value] != index2[o2.Value] {
			return &frontend.Error{Pos: o.Value.Pos, Msg: fmt.Sprintf("the graph's outputs depend on the batch: output %s at batch %d, %s at batch %d", o.Name, b1, o2.Name, b2)}
		}
	}
	return nil
}

// describe names a value for messages: "input x", "reshape f32[64,1568]".
func describe(v *ir.Value) string {
	if v.Name != "" {
		return v.Op + " " + v.Name
	}
	return fmt.Sprintf("%s %s", v.Op, v.Type)
}

// onnxBatched imports an .onnx model with Options.Batch filling its inputs' symbolic first
// dimensions, twice (at B and B+1) as goBatched traces a .go model, so that a model whose nodes
// fix the batch (a Reshape to a constant shape) is an error naming the node, not a wrong graph.
func onnxBatched(filename string, src []byte, opt Options) (*Model, int, error) {
	if opt.Batch < 0 || opt.Batch >= ir.MaxElements {
		return nil, 0, fmt.Errorf("%s: batch %d out of range", filename, opt.Batch)
	}
	o := opt
	o.ONNX.Batch = opt.Batch
	m, err := onnxSource(filename, src, o)
	if err != nil {
		return nil, 0, err
	}
	o.ONNX.Batch = opt.Batch + 1
	m2, err := onnxSource(filename, src, o)
	if err != nil {
		return nil, 0, fmt.Errorf("%v (at batch %d, imported besides %d to check that the graph follows the batch)", err, o.ONNX.Batch, opt.Batch)
	}
	if err := followsBatch(m.Graph, m2.Graph, opt.Batch, o.ONNX.Batch); err != nil {
		if err.Pos == "" {
			err.Pos = filename
		}
		return nil, 0, err
	}
	return m, opt.Batch, nil
}

// batchUnsupported is the error for Options.Batch on a .gir model: it holds a graph traced at
// one batch, or over dims it declares with their ranges, and no dim marked as the batch.
func batchUnsupported(filename, ext string) error {
	if ext == ".gir" {
		return fmt.Errorf("%s: a .gir graph marks no batch dim (its shapes, and the ranges of any dims { } it declares, are written in it): choose the batch when tracing its .go model (gcomp dump model.go --batch B, or --max-batch N for a batch in [1, N])", filename)
	}
	return fmt.Errorf("%s: batch: only .go and .onnx models are traced at a batch chosen when loading", filename)
}
