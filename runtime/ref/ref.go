package ref

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// Run verifies g, checks the supplied inputs and parameters against its declarations, evaluates
// every value in definition order and returns the outputs by name. Intermediate tensors are
// dropped after their last use. inputs and params must hold exactly the graph's inputs and
// parameters.
func Run(g *ir.Graph, inputs, params map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	return RunContext(context.Background(), g, inputs, params)
}

// RunContext is Run under ctx, checked before every node: a run it stops returns an error that
// names the node it stopped before and wraps ctx.Err().
func RunContext(ctx context.Context, g *ir.Graph, inputs, params map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	if len(g.Dims) > 0 { // symbolic.go: run the graph at the inputs' sizes
		var err error
		if g, err = instantiate(g, inputs); err != nil {
			return nil, err
		}
	}
	if err := ops.Verify(g); err != nil {
		return nil, err
	}
	if err := bind(g, ir.OpInput, "input", inputs); err != nil {
		return nil, err
	}
	if err := bind(g, ir.OpParam, "parameter", params); err != nil {
		return nil, err
	}
	if err := CheckBound(g); err != nil {
		return nil, err
	}
	uses := g.Uses()
	isOutput := make(map[*ir.Value]bool, len(g.Outputs))
	for _, o := range g.Outputs {
		isOutput[o.Value] = true
	}
	vals := make(map[*ir.Value]*tensor.Tensor, len(g.Values))
	budget, live := memoryBudget.Load(), int64(0) // live: bytes of the values held
	for _, v := range g.Values {
		var t *tensor.Tensor
		switch v.Op {
		case ir.OpInput:
			t = inputs[v.Name]
		case ir.OpParam:
			t = params[v.Name]
		default:
			if err := ctx.Err(); err != nil {
				return nil, &StopError{Node: g.FormatAt(v), Err: err}
			}
			if need := heldBytes(v.Type); budget > 0 && need > budget-live {
				return nil, budgetError(fmt.Sprintf("%s: the reference interpreter would hold %d bytes, more than its memory budget of %d bytes", g.FormatAt(v), live+need, budget))
			}
			args := make([]*tensor.Tensor, len(v.Args))
			for i, a := range v.Args {
				args[i] = vals[a]
			}
			var err error
			if isCustom(v) {
				t, err = evalCustom(ctx, g, v, args)
			} else {
				t, err = eval(g, v, args)
			}
			if err != nil {
				return nil, err
			}
			for _, a := range v.Args {
				if uses[a]--; uses[a] == 0 {
					if dead := vals[a]; a.Op != ir.OpInput && a.Op != ir.OpParam && !isOutput[a] && !shares(dead, t) {
						tensor.Recycle(dead)
						live -= heldBytes(a.Type)
					}
					delete(vals, a)
				}
			}
		}
		if uses[v] > 0 || isOutput[v] || v.Op == ir.OpInput || v.Op == ir.OpParam {
			live += heldBytes(v.Type)
		}
		if uses[v] > 0 {
			vals[v] = t
		}
	}
	out := make(map[string]*tensor.Tensor, len(g.Outputs))
	for _, o := range g.Outputs {
		out[o.Name] = vals[o.Value]
	}
	return out, nil
}

// StopError is a run its context stopped before Node (the node in IR syntax, after its source
// position). It wraps the context's error.
type StopError struct {
	Node string
	Err  error
}

func (e *StopError) Error() string {
	return e.Node + ": run stopped before this node: " + e.Err.Error()
}
func (e *StopError) Unwrap() error { return e.Err }

// ErrMemoryBudget matches (errors.Is) the error of a run that would exceed the memory budget.
var ErrMemoryBudget = errors.New("the reference interpreter's memory budget is exhausted")

type budgetError string

func (e budgetError) Error() string        { return string(e) }
func (e budgetError) Is(target error) bool { return target == ErrMemoryBudget }

// memoryBudget bounds the bytes of values Run holds at once (0: no bound).
var memoryBudget atomic.Int64

// SetMemoryBudget bounds the memory Run may hold in values (inputs, parameters and the
// intermediates still to be read) to n bytes; 0 removes the bound. A graph that would need more
// fails with an error naming the value that crosses the budget, before it is allocated. Commands
// set it from --ref-memory.
func SetMemoryBudget(n int64) { memoryBudget.Store(n) }

// CheckBound reports whether g's inputs and parameters, which the interpreter holds for the whole
// run, fit the memory budget. Run checks it first; a command calls it before it reads or converts
// the parameters (a 2 GiB f32 initializer is 4 GiB of float64), so that weights too large for the
// budget are refused before they are allocated.
func CheckBound(g *ir.Graph) error {
	budget := memoryBudget.Load()
	if budget <= 0 {
		return nil
	}
	var held int64
	for _, v := range g.Values {
		if v.Op != ir.OpInput && v.Op != ir.OpParam {
			continue
		}
		if held += heldBytes(v.Type); held > budget {
			return budgetError(fmt.Sprintf("%s: the reference interpreter would hold %d bytes in inputs and parameters, more than its memory budget of %d bytes", g.FormatAt(v), held, budget))
		}
	}
	return nil
}

// heldBytes is what a value of type t costs the interpreter: every element is held as a float64
// or an int64.
func heldBytes(t ir.Type) int64 { return int64(t.Shape.NumElements()) * 8 }

// shares reports whether a and b hold the same elements, so that recycling a would clobber b.
// No op returns an operand's storage today; the check keeps it safe if one does.
func shares(a, b *tensor.Tensor) bool {
	switch {
	case a == b:
		return true
	case len(a.F) > 0 && len(b.F) > 0:
		return &a.F[0] == &b.F[0]
	case len(a.I) > 0 && len(b.I) > 0:
		return &a.I[0] == &b.I[0]
	}
	return false
}

// eval runs one node, turning a failure or a panic into an error that names the node.
func eval(g *ir.Graph, v *ir.Value, args []*tensor.Tensor) (t *tensor.Tensor, err error) {
	fail := func(msg string) error { return fmt.Errorf("%s: %s", g.FormatAt(v), msg) }
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, fail(fmt.Sprintf("internal error: %v", p))
		}
	}()
	t, err = ops.Eval(v, args)
	switch {
	case err != nil:
		return nil, fail(err.Error())
	case !t.Type.Equal(v.Type):
		return nil, fail(fmt.Sprintf("internal error: computed %s", t.Type))
	}
	return t, nil
}

// bind checks that supplied holds a well-formed tensor of the declared type for every value of
// kind op, and nothing else.
func bind(g *ir.Graph, op, what string, supplied map[string]*tensor.Tensor) error {
	declared := map[string]bool{}
	for _, v := range g.Values {
		if v.Op != op {
			continue
		}
		declared[v.Name] = true
		t, ok := supplied[v.Name]
		switch {
		case !ok || t == nil:
			return fmt.Errorf("missing %s %s", what, v.Name)
		case !t.Type.Equal(v.Type):
			return fmt.Errorf("%s %s: want %s, have %s", what, v.Name, v.Type, t.Type)
		case t.Type.DType.IsFloat() && len(t.F) != t.Len(), !t.Type.DType.IsFloat() && len(t.I) != t.Len():
			return fmt.Errorf("%s %s: malformed %s tensor (%d floats, %d ints)", what, v.Name, t.Type, len(t.F), len(t.I))
		}
	}
	var extra []string
	for name := range supplied {
		if !declared[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return fmt.Errorf("unknown %s %s: the graph %s declares no such %s", what, strings.Join(extra, ", "), g.Name, what)
	}
	return nil
}
