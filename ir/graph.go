package ir

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"unicode"
)

// Op names the graph layer itself uses. Every other op name is defined by package ops.
const (
	OpInput = "input" // a named graph input, supplied at run time
	OpParam = "param" // a named parameter (weight), bound at load time
)

// Value is one SSA value: the result of an op applied to earlier values. Inputs and parameters are
// values with the ops "input" and "param" and no arguments.
type Value struct {
	ID    int    // unique within the graph; stable under printing, not part of the text form
	Op    string // op name, a row of the op table (package ops), or OpInput/OpParam
	Args  []*Value
	Attrs Attrs
	Type  Type
	Name  string // required for inputs and parameters, optional otherwise
	Pos   string // where the user created it, "model.go:17"; printed as loc("...")
	Line  int    // line in the .gir file it was parsed from (0 if built); for error messages only
}

// Output is a named graph result.
type Output struct {
	Name  string
	Value *Value
}

// Graph is a static dataflow graph. Values are kept in definition order, which is a topological
// order: a value's arguments always come before it.
type Graph struct {
	Name    string
	File    string // source file name used in error messages, if any
	Values  []*Value
	Outputs []Output
	Dims    []Dim // the symbolic dims its types may use, in declaration order (dims.go)
	nextID  int
}

// NewGraph returns an empty graph.
func NewGraph(name string) *Graph { return &Graph{Name: name} }

func (g *Graph) add(v *Value) *Value {
	v.ID = g.nextID
	g.nextID++
	g.Values = append(g.Values, v)
	return v
}

// Input declares a named input.
func (g *Graph) Input(name string, t Type, attrs Attrs) *Value {
	return g.add(&Value{Op: OpInput, Name: name, Type: t, Attrs: attrs})
}

// Param declares a named parameter. Its attrs carry the initializer (see package tensor).
func (g *Graph) Param(name string, t Type, attrs Attrs) *Value {
	return g.add(&Value{Op: OpParam, Name: name, Type: t, Attrs: attrs})
}

// Add appends a node computing op(args...) with the given result type.
func (g *Graph) Add(op string, t Type, attrs Attrs, args ...*Value) *Value {
	return g.add(&Value{Op: op, Args: args, Type: t, Attrs: attrs})
}

// Append adds an already constructed value (a pass building a new graph uses it); it assigns the ID.
func (g *Graph) Append(v *Value) *Value { return g.add(v) }

// SetOutput names v as a graph output.
func (g *Graph) SetOutput(name string, v *Value) { g.Outputs = append(g.Outputs, Output{name, v}) }

// Inputs returns the input values in declaration order.
func (g *Graph) Inputs() []*Value { return g.byOp(OpInput) }

// Params returns the parameter values in declaration order.
func (g *Graph) Params() []*Value { return g.byOp(OpParam) }

func (g *Graph) byOp(op string) []*Value {
	var vs []*Value
	for _, v := range g.Values {
		if v.Op == op {
			vs = append(vs, v)
		}
	}
	return vs
}

// Lookup returns the input or parameter with the given name.
func (g *Graph) Lookup(name string) *Value {
	for _, v := range g.Values {
		if v.Name == name && (v.Op == OpInput || v.Op == OpParam) {
			return v
		}
	}
	return nil
}

// Uses counts, for every value, how many times it is an argument or an output.
func (g *Graph) Uses() map[*Value]int {
	uses := make(map[*Value]int, len(g.Values))
	for _, v := range g.Values {
		for _, a := range v.Args {
			uses[a]++
		}
	}
	for _, o := range g.Outputs {
		uses[o.Value]++
	}
	return uses
}

// Clone returns a deep copy of g: new values with the same IDs, ops, attributes and types.
func (g *Graph) Clone() *Graph {
	c := &Graph{Name: g.Name, File: g.File, Dims: slices.Clone(g.Dims), nextID: g.nextID}
	m := make(map[*Value]*Value, len(g.Values))
	for _, v := range g.Values {
		nv := *v
		nv.Args = make([]*Value, len(v.Args))
		for i, a := range v.Args {
			nv.Args[i] = m[a]
		}
		nv.Attrs = v.Attrs.Clone()
		nv.Type.Shape = v.Type.Shape.Clone()
		nv.Type.Sym = slices.Clone(v.Type.Sym)
		m[v] = &nv
		c.Values = append(c.Values, &nv)
	}
	for _, o := range g.Outputs {
		c.Outputs = append(c.Outputs, Output{o.Name, m[o.Value]})
	}
	return c
}

// Where returns the best position for messages about v: the user's source line if known, else
// the line of the .gir file, else the empty string.
func (v *Value) Where(g *Graph) string {
	switch {
	case v.Pos != "":
		return printable(v.Pos)
	case v.Line > 0 && g != nil && g.File != "":
		return fmt.Sprintf("%s:%d", g.File, v.Line)
	}
	return ""
}

// printable returns s as it may be printed to a terminal: unchanged when every rune is
// printable, else Go-quoted without the quotes, so that a loc("...") read from a file cannot
// send escape sequences to the user's terminal.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			q := strconv.Quote(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}

// Attrs holds an op's attributes. Values have one of the types int, float64, bool, string, DType,
// []int or []float64; anything else is rejected by the verifier.
type Attrs map[string]any

// Clone returns a copy whose slices do not alias a's.
func (a Attrs) Clone() Attrs {
	if a == nil {
		return nil
	}
	c := make(Attrs, len(a))
	for k, v := range a {
		switch x := v.(type) {
		case []int:
			c[k] = slices.Clone(x)
		case []float64:
			c[k] = slices.Clone(x)
		default:
			c[k] = v
		}
	}
	return c
}

// Keys returns the attribute names in sorted order (the printing order).
func (a Attrs) Keys() []string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Int returns the int attribute name, or def if absent.
func (a Attrs) Int(name string, def int) int {
	if v, ok := a[name].(int); ok {
		return v
	}
	return def
}

// Ints returns the []int attribute name, or nil if absent.
func (a Attrs) Ints(name string) []int {
	v, _ := a[name].([]int)
	return v
}

// Float returns the float64 attribute name (an int attribute converts), or def if absent.
func (a Attrs) Float(name string, def float64) float64 {
	switch v := a[name].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	}
	return def
}

// Floats returns the []float64 attribute name ([]int converts), or nil if absent.
func (a Attrs) Floats(name string) []float64 {
	switch v := a[name].(type) {
	case []float64:
		return v
	case []int:
		f := make([]float64, len(v))
		for i, x := range v {
			f[i] = float64(x)
		}
		return f
	}
	return nil
}

// Bool returns the bool attribute name, or def if absent.
func (a Attrs) Bool(name string, def bool) bool {
	if v, ok := a[name].(bool); ok {
		return v
	}
	return def
}

// String returns the string attribute name, or def if absent.
func (a Attrs) String(name string, def string) string {
	if v, ok := a[name].(string); ok {
		return v
	}
	return def
}

// DType returns the DType attribute name, or Invalid if absent.
func (a Attrs) DType(name string) DType {
	v, _ := a[name].(DType)
	return v
}
