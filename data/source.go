package data

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Dataset is what a Loader hands out in batches: numbered rows, each an input and a target (a
// torch.utils.data.Dataset whose __getitem__ takes a list of indices). Users implement it for
// their own data; Images (IDX files), Tensors (.npy, .npz, CSV) are the package's.
type Dataset interface {
	// Len is the number of rows.
	Len() int
	// Rows returns the inputs and the targets of rows, in that order, as new tensors whose first
	// dimension is len(rows) and whose other dimensions are the same for every call. An error
	// ends the epoch that asked for the rows.
	Rows(rows []int) (x, y *tensor.Tensor, err error)
}

// ReadRows returns d.Rows(rows), checking that it returned one input and one target per row.
func ReadRows(d Dataset, rows []int) (x, y *tensor.Tensor, err error) {
	if x, y, err = d.Rows(rows); err != nil {
		return nil, nil, err
	}
	if x == nil || y == nil || x.Type.Shape.Rank() == 0 || y.Type.Shape.Rank() == 0 || x.Type.Shape[0] != len(rows) || y.Type.Shape[0] != len(rows) {
		return nil, nil, fmt.Errorf("data: %s: asked for %d rows, returned inputs %v and targets %v: want the rows as the first dimension of both", Name(d), len(rows), typeOf(x), typeOf(y))
	}
	return x, y, nil
}

func typeOf(t *tensor.Tensor) any {
	if t == nil {
		return "nil"
	}
	return t.Type
}

// TargetReader is a Dataset that reads the targets of rows without their inputs, which checks
// of every target (train.Fit's) use instead of Rows.
type TargetReader interface {
	Targets(rows []int) (*tensor.Tensor, error)
}

// ReadTargets returns the targets of rows: d's Targets when it has the method, else Rows'.
func ReadTargets(d Dataset, rows []int) (*tensor.Tensor, error) {
	if t, ok := d.(TargetReader); ok {
		return t.Targets(rows)
	}
	_, y, err := d.Rows(rows)
	return y, err
}

// Name is d's name for messages: its String method's result when it has one.
func Name(d Dataset) string {
	if s, ok := d.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", d)
}

// RowName names row i of d for messages: "FILE:LINE" for a CSV file, else "NAME: row i".
func RowName(d Dataset, i int) string {
	if r, ok := d.(interface{ RowName(int) string }); ok {
		return r.RowName(i)
	}
	return fmt.Sprintf("%s: row %d", Name(d), i)
}

// Tensors is a Dataset held in two tensors whose first dimension is the row: X[i] is row i's
// input, Y[i] its target, of any dtype and shape.
type Tensors struct {
	Name string
	X, Y *tensor.Tensor
	// Lines, when set, are the source file's line of each row (a CSV file's), for messages.
	Lines []int
}

// NewTensors checks that x and y have the same number of rows (at least one dimension each).
func NewTensors(name string, x, y *tensor.Tensor) (*Tensors, error) {
	if x.Type.Shape.Rank() == 0 || y.Type.Shape.Rank() == 0 {
		return nil, fmt.Errorf("data: %s: inputs %s and targets %s need a first dimension, the row", name, x.Type, y.Type)
	}
	if x.Type.Shape[0] != y.Type.Shape[0] {
		return nil, fmt.Errorf("data: %s: %d rows of inputs (%s) but %d rows of targets (%s)", name, x.Type.Shape[0], x.Type, y.Type.Shape[0], y.Type)
	}
	return &Tensors{Name: name, X: x, Y: y}, nil
}

func (d *Tensors) Len() int       { return d.X.Type.Shape[0] }
func (d *Tensors) String() string { return d.Name }

// RowName is "FILE:LINE" when Lines are known.
func (d *Tensors) RowName(i int) string {
	if i >= 0 && i < len(d.Lines) {
		return fmt.Sprintf("%s:%d", d.Name, d.Lines[i])
	}
	return fmt.Sprintf("%s: row %d", d.Name, i)
}

func (d *Tensors) Rows(rows []int) (x, y *tensor.Tensor, err error) {
	if x, err = gather(d, d.X, rows); err == nil {
		y, err = gather(d, d.Y, rows)
	}
	return x, y, err
}

// Targets gathers the targets of rows.
func (d *Tensors) Targets(rows []int) (*tensor.Tensor, error) { return gather(d, d.Y, rows) }

// gather copies the rows of t into a new tensor.
func gather(d *Tensors, t *tensor.Tensor, rows []int) (*tensor.Tensor, error) {
	shape := t.Type.Shape.Clone()
	n := shape[0]
	shape[0] = len(rows)
	g := tensor.New(ir.Type{DType: t.Type.DType, Shape: shape})
	row := 1
	for _, s := range shape[1:] {
		row *= s
	}
	for k, r := range rows {
		if r < 0 || r >= n {
			return nil, fmt.Errorf("data: %s: row %d of %d", d.Name, r, n)
		}
		if g.F != nil {
			copy(g.F[k*row:(k+1)*row], t.F[r*row:(r+1)*row])
		} else {
			copy(g.I[k*row:(k+1)*row], t.I[r*row:(r+1)*row])
		}
	}
	return g, nil
}
