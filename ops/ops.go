package ops

import (
	"fmt"
	"sort"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Class groups ops by how they iterate, which is what fusion and codegen ask about.
type Class uint8

const (
	Elementwise Class = iota + 1 // out[i] = f(args[i]...), all operands and the result of one shape
	Reduce                       // folds some axes of one operand
	Movement                     // moves or copies elements without arithmetic (reshape, transpose, ...)
	Contraction                  // dot_general, conv2d: multiply-accumulate over shared axes
	Other                        // everything else (pooling, gather, iota, constant, input, param)
	Custom                       // a user's own kernel (custom.go): opaque, never fused with anything
)

var classNames = [...]string{Elementwise: "elementwise", Reduce: "reduce", Movement: "movement", Contraction: "contraction", Other: "other", Custom: "custom"}

func (c Class) String() string {
	if int(c) < len(classNames) && classNames[c] != "" {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// AttrKind is the Go type an attribute must have (see ir.Attrs).
type AttrKind uint8

const (
	AttrInt    AttrKind = iota + 1 // int
	AttrInts                       // []int
	AttrFloat                      // float64 (an int literal is accepted)
	AttrFloats                     // []float64 ([]int accepted)
	AttrBool                       // bool
	AttrString                     // string
	AttrDType                      // ir.DType
)

// AttrSpec declares one attribute of an op.
type AttrSpec struct {
	Name     string
	Kind     AttrKind
	Optional bool
}

// Variadic is the Arity of ops that take any number (at least one) of operands.
const Variadic = -1

// Op is one row of the op table.
type Op struct {
	Name  string
	Arity int // number of operands, or Variadic
	Class Class
	Attrs []AttrSpec
	// Doc states the op's semantics, including NaN, ±inf, ±0 and integer overflow behaviour.
	Doc string
	// Infer computes the result type from the operand types and attributes, or explains why the
	// operands are invalid. Arity and attribute kinds are checked before it is called.
	Infer func(args []ir.Type, a ir.Attrs) (ir.Type, error)
	// Eval is the reference semantics: it computes the result of type out from the operands.
	Eval func(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (*tensor.Tensor, error)
}

var byName = map[string]*Op{}

func register(rows ...*Op) {
	for _, op := range rows {
		if byName[op.Name] != nil {
			panic("ops: duplicate op " + op.Name)
		}
		byName[op.Name] = op
	}
}

// Lookup returns the op named name.
func Lookup(name string) (*Op, bool) {
	op, ok := byName[name]
	return op, ok
}

// All returns every op, sorted by name.
func All() []*Op {
	all := make([]*Op, 0, len(byName))
	for _, op := range byName {
		all = append(all, op)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

// ClassOf returns the class of the named op (Other for input, param and unknown names).
func ClassOf(name string) Class {
	if op, ok := byName[name]; ok {
		return op.Class
	}
	return Other
}

// Infer checks arity and attributes and computes the result type of op applied to args.
func Infer(name string, args []ir.Type, a ir.Attrs) (ir.Type, error) {
	op, ok := byName[name]
	if !ok {
		return ir.Type{}, fmt.Errorf("unknown op %q", name)
	}
	if op.Arity == Variadic && len(args) == 0 {
		return ir.Type{}, fmt.Errorf("%s: needs at least one operand", name)
	}
	if op.Arity != Variadic && len(args) != op.Arity {
		return ir.Type{}, fmt.Errorf("%s: takes %d operands, have %d", name, op.Arity, len(args))
	}
	if err := checkAttrs(op, a); err != nil {
		return ir.Type{}, err
	}
	t, err := op.Infer(args, a)
	if err != nil {
		return ir.Type{}, fmt.Errorf("%s: %w", name, err)
	}
	t.Shape = t.Shape.Clone() // never alias an operand's shape
	return t, nil
}

func checkAttrs(op *Op, a ir.Attrs) error {
	known := map[string]bool{}
	for _, s := range op.Attrs {
		known[s.Name] = true
		v, present := a[s.Name]
		if !present {
			if !s.Optional {
				return fmt.Errorf("%s: missing attribute %s", op.Name, s.Name)
			}
			continue
		}
		ok := false
		switch s.Kind {
		case AttrInt:
			_, ok = v.(int)
		case AttrInts:
			_, ok = v.([]int)
		case AttrFloat:
			switch v.(type) {
			case float64, int:
				ok = true
			}
		case AttrFloats:
			switch v.(type) {
			case []float64, []int:
				ok = true
			}
		case AttrBool:
			_, ok = v.(bool)
		case AttrString:
			_, ok = v.(string)
		case AttrDType:
			_, ok = v.(ir.DType)
		}
		if !ok {
			return fmt.Errorf("%s: attribute %s has the wrong kind (%s)", op.Name, s.Name, ir.FormatAttr(v))
		}
	}
	for _, k := range a.Keys() {
		if !known[k] {
			return fmt.Errorf("%s: unknown attribute %s", op.Name, k)
		}
	}
	return nil
}

// Check is the ir.OpChecker for the op table: the op exists, and the declared result type is the
// inferred one. Inputs and parameters are checked for their attributes only.
func Check(g *ir.Graph, v *ir.Value) error {
	if v.Op == ir.OpInput || v.Op == ir.OpParam {
		return nil
	}
	args := make([]ir.Type, len(v.Args))
	for i, a := range v.Args {
		args[i] = a.Type
	}
	if symbolicValue(g, v) {
		return checkSym(g, v, args) // symbolic.go
	}
	t, err := Infer(v.Op, args, v.Attrs)
	if err != nil {
		return err
	}
	if !t.Equal(v.Type) {
		return fmt.Errorf("result type is %s, but the op computes %s", v.Type, t)
	}
	return nil
}

// Verify runs the IR verifier with the op table's checker.
func Verify(g *ir.Graph) error { return ir.Verify(g, Check) }

// Eval computes v from its operands' values with the op's reference semantics.
func Eval(v *ir.Value, args []*tensor.Tensor) (*tensor.Tensor, error) {
	op, ok := byName[v.Op]
	if !ok {
		return nil, fmt.Errorf("unknown op %q", v.Op)
	}
	// The verifier allows larger values between ops (attention's scores, which no kernel
	// computes); the reference semantics would hold one in memory, 8 bytes an element.
	if msg := ir.Oversize(v.Type.Shape); msg != "" {
		return nil, fmt.Errorf("the reference semantics hold the value in memory: %s", msg)
	}
	return op.Eval(args, v.Attrs, v.Type)
}
