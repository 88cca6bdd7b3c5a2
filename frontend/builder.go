package frontend

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// Builder builds one graph. The builder Build passes to a model, or NewBuilder returns, is the
// root scope; Sub returns a scope whose parameter names carry a prefix, the way PyTorch names a
// submodule's parameters "conv1.weight". All scopes of a graph share its values and names.
type Builder struct {
	st     *state
	prefix string // "" or "layer.0." for parameters declared in this scope
}

// state is what every scope and tensor of one graph shares.
type state struct {
	g       *ir.Graph
	pos     PositionFunc
	decl    map[string]decl   // input and parameter names
	outputs map[string]string // output names → where they were declared
	mode    mode              // eval or training (WithTraining)
	dir     string            // the model's folder: custom kernels' source files are read from it
	batch   batchState        // the batch asked for and the model's own (Batch)
	// paramDType replaces f32 in parameters' types (WithParamDType); ir.Invalid keeps f32.
	paramDType ir.DType
	quantRule  QuantRule // parameters stored as integers (WithQuantizedParams); nil: none
}

// decl is what a declared name stands for and where it was declared.
type decl struct{ kind, pos string }

// Option configures a Builder.
type Option func(*state)

// WithPosition sets the function that finds the user's source position for values and errors
// (default CallerPosition). A loader that runs model files in an interpreter passes its own, or
// one that returns "" and fills positions in from the interpreter's panic report.
func WithPosition(f PositionFunc) Option { return func(s *state) { s.pos = f } }

// WithDir sets the model's folder, where Kernel.File names are resolved (default: the
// working directory). A loader passes the model file's directory.
func WithDir(dir string) Option { return func(s *state) { s.dir = dir } }

// NewBuilder returns the root scope of an empty graph called name. Most programs call Build
// instead, which also turns the DSL's panics into errors.
func NewBuilder(name string, opts ...Option) *Builder {
	st := &state{g: ir.NewGraph(name), pos: CallerPosition, decl: map[string]decl{}, outputs: map[string]string{}}
	for _, o := range opts {
		o(st)
	}
	return &Builder{st: st}
}

// Build runs model on a new builder and returns the verified graph. A mistake in the model comes
// back as an *Error carrying the position of the user's call; any other panic in the model is
// also returned as an *Error, never propagated.
func Build(name string, model func(*Builder), opts ...Option) (g *ir.Graph, err error) {
	b := NewBuilder(name, opts...)
	defer func() {
		if r := recover(); r != nil {
			g, err = nil, b.st.asError(r)
		}
	}()
	if b.st.batch.want < 0 {
		return nil, &Error{Msg: fmt.Sprintf("batch: must be positive, have %d", b.st.batch.want)}
	}
	if err := b.st.checkMaxBatch(); err != nil {
		return nil, err
	}
	model(b)
	if err := b.st.checkBatch(); err != nil {
		return nil, err
	}
	return b.Graph()
}

// Graph verifies the graph built so far against the op table and returns it.
func (b *Builder) Graph() (*ir.Graph, error) {
	if len(b.st.g.Outputs) == 0 {
		return nil, &Error{Msg: fmt.Sprintf("graph %s has no outputs: declare them with Output", b.st.g.Name)}
	}
	if err := ops.Verify(b.st.g); err != nil {
		return nil, err
	}
	return b.st.g, nil
}

// Sub returns the scope of a submodule called name: parameters declared in it are named
// "name.param", or "outer.name.param" under another Sub. Inputs and outputs are not prefixed.
func (b *Builder) Sub(name string) *Builder {
	if name == "" {
		return b
	}
	b.st.checkName("scope", name)
	return &Builder{st: b.st, prefix: b.prefix + name + "."}
}

// Prefix returns the scope's parameter name prefix: "" at the root, "layer.0." inside
// b.Sub("layer").Sub("0").
func (b *Builder) Prefix() string { return b.prefix }

// Input declares a graph input of the given dtype and shape. Its name is not prefixed by the
// scope. Integer inputs such as token ids can declare their range with WithRange.
func (b *Builder) Input(name string, dtype ir.DType, dims ...int) *Tensor {
	t := b.st.symType("input "+name, dtype, dims) // symbolic.go: dims may hold Dim handles
	b.st.declare("input", name)
	return b.st.add(b.st.g.Input(name, t, nil))
}

// WithRange declares that the integer input t holds values in [low, high), e.g. token ids below
// the vocabulary size; tools that make up random inputs draw from it. It returns t.
func (t *Tensor) WithRange(low, high int) *Tensor {
	s := t.state()
	if t.v.Op != ir.OpInput || !t.v.Type.DType.IsInt() {
		s.failf("WithRange: %s is not an integer input", named(t, "tensor"))
	}
	if low >= high {
		s.failf("WithRange: empty range [%d, %d) for input %s", low, high, t.v.Name)
	}
	t.v.Attrs = ir.Attrs{"range": []int{low, high}}
	return t
}

// Init is a parameter's initializer: how tools that need starting weights make them up from a
// seed. The zero Init is Zeros.
type Init struct{ attrs ir.Attrs }

// Uniform draws from U(low, high).
func Uniform(low, high float64) Init {
	return Init{ir.Attrs{"init": tensor.InitUniform, "low": low, "high": high}}
}

// DefaultUniform is PyTorch's default initializer for the weights and biases of Linear, Conv2d
// and the recurrent layers: U(-1/√fanIn, 1/√fanIn). (For weights PyTorch calls it
// kaiming_uniform_ with a=√5, which works out to the same bound.)
func DefaultUniform(fanIn int) Init {
	k := 1 / math.Sqrt(float64(max(fanIn, 1)))
	return Uniform(-k, k)
}

// XavierUniform is PyTorch's xavier_uniform_ (gain 1): U(±√(6/(fanIn+fanOut))).
func XavierUniform(fanIn, fanOut int) Init {
	k := math.Sqrt(6 / float64(max(fanIn+fanOut, 1)))
	return Uniform(-k, k)
}

// Normal draws from N(mean, std²).
func Normal(mean, std float64) Init {
	return Init{ir.Attrs{"init": tensor.InitNormal, "mean": mean, "std": std}}
}

// Zeros fills with 0.
func Zeros() Init { return Init{ir.Attrs{"init": tensor.InitZeros}} }

// Ones fills with 1.
func Ones() Init { return Init{ir.Attrs{"init": tensor.InitOnes}} }

// Constant fills with value.
func Constant(value float64) Init {
	return Init{ir.Attrs{"init": tensor.InitConstant, "value": value}}
}

// Param declares a parameter (a weight, bound when the graph is loaded) named by the scope's
// prefix and name, e.g. "fc1.weight" for b.Sub("fc1").Param("weight", ...).
func (b *Builder) Param(name string, t ir.Type, init Init) *Tensor {
	full := b.prefix + name
	t = b.st.paramType(t)
	t = b.st.checkType("parameter "+full, t.DType, t.Shape)
	if q := b.quantized(full, t); q != nil {
		return q
	}
	b.st.declare("parameter", full)
	attrs := init.attrs.Clone()
	if attrs == nil {
		attrs = Zeros().attrs
	}
	return b.st.add(b.st.g.Param(full, t, attrs))
}

// SetInit replaces the initializer of the parameter t, like PyTorch's nn.init functions applied
// to a module's weight (nn.init.normal_(m.weight, 0, 0.02)). It returns t.
func (t *Tensor) SetInit(init Init) *Tensor {
	s := t.state()
	if t.v.Op != ir.OpParam {
		s.failf("SetInit: %s is not a parameter", named(t, "tensor"))
	}
	t.v.Attrs = init.attrs.Clone()
	if t.v.Attrs == nil {
		t.v.Attrs = Zeros().attrs
	}
	return t
}

// Lookup returns the input or parameter with the given full name ("fc1.weight"), for example to
// share a weight between two layers. An unknown name is an error.
func (b *Builder) Lookup(name string) *Tensor {
	v := b.st.g.Lookup(name)
	if v == nil {
		b.st.failf("unknown input or parameter %q%s", name, b.st.suggest(name))
	}
	return &Tensor{s: b.st, v: v}
}

// suggest lists declared names that share name's last element, for "unknown name" messages.
func (s *state) suggest(name string) string {
	last := name[strings.LastIndexByte(name, '.')+1:]
	var near []string
	for n := range s.decl {
		if n[strings.LastIndexByte(n, '.')+1:] == last {
			near = append(near, n)
		}
	}
	if len(near) == 0 {
		return ""
	}
	slices.Sort(near)
	if len(near) > 5 {
		near = append(near[:5], "...")
	}
	return " (have " + strings.Join(near, ", ") + ")"
}

// Output declares t a graph output called name.
func (b *Builder) Output(name string, t *Tensor) {
	s := b.st
	s.checkName("output", name)
	s.own(t, "output "+name)
	if at, dup := s.outputs[name]; dup {
		s.failf("output %s declared twice (first at %s)", name, orUnknown(at))
	}
	s.outputs[name] = s.pos()
	s.g.SetOutput(name, t.v)
}

// Full returns a tensor of the given dtype and shape with every element equal to value.
func (b *Builder) Full(value float64, dtype ir.DType, dims ...int) *Tensor {
	t := b.st.checkType("full", dtype, dims)
	return b.st.constant(value, t)
}

// Zeros returns a tensor of zeros.
func (b *Builder) Zeros(dtype ir.DType, dims ...int) *Tensor { return b.Full(0, dtype, dims...) }

// Ones returns a tensor of ones.
func (b *Builder) Ones(dtype ir.DType, dims ...int) *Tensor { return b.Full(1, dtype, dims...) }

// Tensor returns a constant tensor holding values in row-major order (like torch.tensor).
func (b *Builder) Tensor(values []float64, dtype ir.DType, dims ...int) *Tensor {
	t := b.st.checkType("tensor", dtype, dims)
	if len(values) != t.Shape.NumElements() {
		b.st.failf("tensor: %d values for shape %v, which holds %d", len(values), t.Shape, t.Shape.NumElements())
	}
	return b.st.op("constant", ir.Attrs{"shape": []int(t.Shape), "dtype": dtype, "value": slices.Clone(values)})
}

// Iota returns a tensor of the given dtype and shape whose elements are their index along dim
// (torch.arange broadcast along the other dims).
func (b *Builder) Iota(dtype ir.DType, dim int, dims ...int) *Tensor {
	t := b.st.checkType("iota", dtype, dims)
	if dim < 0 {
		dim += len(dims)
	}
	if dim < 0 || dim >= len(dims) {
		b.st.failf("iota: dim %d out of range for shape %v", dim, t.Shape)
	}
	return b.st.op("iota", ir.Attrs{"shape": []int(t.Shape), "dtype": dtype, "dim": dim})
}

// Arange returns [0, 1, ..., n-1] (torch.arange(n)).
func (b *Builder) Arange(n int, dtype ir.DType) *Tensor { return b.Iota(dtype, 0, n) }

// --- shared internals ---

// add records a new value's position and wraps it.
func (s *state) add(v *ir.Value) *Tensor {
	v.Pos = s.pos()
	return &Tensor{s: s, v: v}
}

// op appends op(args...) after checking it against the op table.
func (s *state) op(name string, attrs ir.Attrs, args ...*Tensor) *Tensor {
	return s.opWant(name, attrs, nil, args...) // symbolic.go
}

// constant returns a splat constant of type t.
func (s *state) constant(value float64, t ir.Type) *Tensor {
	if t.Sym != nil { // a scalar broadcast to the symbolic sizes
		return s.constant(value, ir.Type{DType: t.DType, Shape: ir.Shape{}}).broadcastSym(t)
	}
	if !t.DType.IsFloat() && (value != math.Trunc(value) || math.IsInf(value, 0)) {
		s.failf("constant %v does not fit the integer type %s", value, t)
	}
	return s.op("constant", ir.Attrs{"shape": []int(t.Shape.Clone()), "dtype": t.DType, "value": []float64{value}})
}

// own checks that t is a tensor of this graph.
func (s *state) own(t *Tensor, what string) {
	if t == nil || t.v == nil {
		s.failf("%s: nil tensor", what)
	}
	if t.s != s {
		s.failf("%s: tensor %s belongs to another graph", what, t.describe("operand"))
	}
}

func (s *state) checkType(what string, dtype ir.DType, dims []int) ir.Type {
	if !dtype.Valid() {
		s.failf("%s: invalid dtype", what)
	}
	for _, d := range dims {
		if d < 0 {
			s.failf("%s: negative dimension in %v", what, dims)
		}
	}
	return ir.Type{DType: dtype, Shape: ir.Shape(slices.Clone(dims))}
}

// checkName accepts the names PyTorch's state_dict uses: letters, digits, '_' and '.', with no
// empty element between dots. Only a scope (a Sequential child "0") may be all digits: a value
// name of only digits would read as an unnamed value in the text form.
func (s *state) checkName(what, name string) {
	ok := name != "" && (what == "scope" || strings.Trim(name, "0123456789") != "")
	for _, part := range strings.Split(name, ".") {
		ok = ok && part != ""
	}
	for _, c := range name {
		ok = ok && (c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z')
	}
	if !ok {
		s.failf("bad %s name %q: want letters, digits, '_' and '.'", what, name)
	}
}

// declare reserves an input or parameter name.
func (s *state) declare(kind, name string) {
	s.checkName(kind, name)
	if d, dup := s.decl[name]; dup {
		s.failf("duplicate name %q: already declared as %s at %s", name, d.kind, orUnknown(d.pos))
	}
	s.decl[name] = decl{kind, s.pos()}
}

func orUnknown(pos string) string {
	if pos == "" {
		return "an unknown position"
	}
	return pos
}

// Fail reports a mistake in the model at the user's current position: it panics with an *Error,
// which Build returns as its error. Modules written outside this package use it to check their
// arguments the way the DSL does.
func (b *Builder) Fail(format string, args ...any) { b.st.failf(format, args...) }

// Builder returns the root scope of the tensor's graph, for example to add constants.
func (t *Tensor) Builder() *Builder { return &Builder{st: t.state()} }
