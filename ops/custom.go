package ops

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// CustomOp is the op name of a user's own kernel. Its attributes carry everything the
// compiler needs (the kernel's source, entry, launch geometry and scalar arguments), so a
// .gir holding one stays self-contained; what it computes is defined by a Go reference
// function registered with RegisterReference, which a .gir cannot carry.
const CustomOp = "custom"

// CustomLangs are the source languages of a custom op: CUDA C (compiled by NVRTC) or PTX.
var CustomLangs = []string{"cuda", "ptx"}

// CustomScalarTypes are the dtypes a custom op's scalar arguments may have.
var CustomScalarTypes = []ir.DType{ir.I32, ir.I64, ir.F32, ir.F64}

// Reference is a custom op's Go reference semantics: the operands' values and the scalar
// arguments (as float64) in, the result out. It may panic; Eval reports that as an error.
type Reference func(inputs []*tensor.Tensor, scalars []float64) *tensor.Tensor

var (
	refMu sync.RWMutex
	refs  = map[string]Reference{} // by refKey
)

func refKey(name, hash string) string { return name + "@" + hash }

// RegisterReference makes f the reference semantics of the custom ops called name whose
// source has the hash SourceHash gives.
func RegisterReference(name, hash string, f Reference) {
	refMu.Lock()
	defer refMu.Unlock()
	refs[refKey(name, hash)] = f
}

// SourceHash is the hash a custom op's "hash" attribute holds: SHA-256 of its source, hex.
func SourceHash(source string) string {
	h := sha256.Sum256([]byte(source))
	return hex.EncodeToString(h[:])
}

// ScalarTypes parses a custom op's "scalar_types" attribute ("i32 f32").
func ScalarTypes(a ir.Attrs) ([]ir.DType, error) {
	s, _ := a["scalar_types"].(string)
	var out []ir.DType
	for _, f := range strings.Fields(s) {
		t, ok := ir.ParseDType(f)
		if !ok || !slices.Contains(CustomScalarTypes, t) {
			return nil, fmt.Errorf("scalar type %q is not one of i32, i64, f32, f64", f)
		}
		out = append(out, t)
	}
	return out, nil
}

// customAttrs are a custom kernel's attributes.
var customAttrs = []AttrSpec{
	{"name", AttrString, false}, {"entry", AttrString, false}, {"lang", AttrString, false},
	{"file", AttrString, false}, {"source", AttrString, false}, {"hash", AttrString, false},
	{"dtype", AttrDType, false}, {"shape", AttrInts, false},
	{"grid", AttrInts, false}, {"block", AttrInts, false},
	{"scalars", AttrFloats, true}, {"scalar_types", AttrString, true},
}

// MaxCustomGrads is how many of a custom op's operands may have a backward kernel.
const MaxCustomGrads = 4

// GradAttr is the name of attribute key of the backward kernel of operand i: "grad0.source".
func GradAttr(i int, key string) string { return fmt.Sprintf("grad%d.%s", i, key) }

// GradAttrs returns the attributes of the backward kernel of operand i of a custom op, as a
// custom op of its own (whose operands are the op's operands and the gradient of its
// result), or false when it has none.
func GradAttrs(a ir.Attrs, i int) (ir.Attrs, bool) {
	if _, ok := a[GradAttr(i, "name")]; !ok {
		return nil, false
	}
	g := ir.Attrs{}
	for _, s := range customAttrs {
		if v, ok := a[GradAttr(i, s.Name)]; ok {
			g[s.Name] = v
		}
	}
	return g, true
}

func init() {
	specs := slices.Clone(customAttrs)
	for i := range MaxCustomGrads {
		for _, s := range customAttrs {
			specs = append(specs, AttrSpec{GradAttr(i, s.Name), s.Kind, true})
		}
	}
	register(&Op{Name: CustomOp, Arity: Variadic, Class: Custom, Infer: inferCustom, Eval: evalCustom,
		Attrs: specs,
		Doc: "A user's own kernel: `source` (CUDA C if lang is \"cuda\", compiled by NVRTC; or PTX) from `file`, " +
			"whose .entry `entry` takes one pointer per operand, then one to the result (dtype, shape), then the " +
			"scalars (float values, of the space-separated scalar_types i32, i64, f32, f64), and runs on grid × block " +
			"(3 positive ints each). hash is the source's SHA-256. Its semantics are the Go reference function the " +
			"model registered under name and hash; a graph read from a .gir has none, and evaluating it is an error. Never fused. " +
			"gradN.* (N < 4), all optional, are the same attributes for the backward kernel of operand N: a custom op over the " +
			"operands and the result's gradient whose result, of operand N's type, is operand N's gradient."})
}

// inferCustom checks the kernel's attributes, and those of its backward kernels.
func inferCustom(args []ir.Type, a ir.Attrs) (ir.Type, error) {
	t, err := inferKernel(a)
	if err != nil {
		return t, err
	}
	for i := range MaxCustomGrads {
		g, ok := GradAttrs(a, i)
		if !ok {
			continue
		}
		if i >= len(args) {
			return ir.Type{}, fmt.Errorf("%q: a backward kernel for operand %d of %d", a.String("name", ""), i, len(args))
		}
		for _, s := range customAttrs {
			if _, ok := g[s.Name]; !ok && !s.Optional {
				return ir.Type{}, fmt.Errorf("%q: backward kernel %d: missing attribute %s", a.String("name", ""), i, GradAttr(i, s.Name))
			}
		}
		gt, err := inferKernel(g)
		if err != nil {
			return ir.Type{}, fmt.Errorf("backward kernel %d: %v", i, err)
		}
		if !gt.Equal(args[i]) {
			return ir.Type{}, fmt.Errorf("%q: backward kernel %d computes %s, operand %d is %s", a.String("name", ""), i, gt, i, args[i])
		}
	}
	return t, nil
}

func inferKernel(a ir.Attrs) (ir.Type, error) {
	name := a.String("name", "")
	if !isIdent(name) {
		return ir.Type{}, fmt.Errorf("name %q is not an identifier (letters, digits, _)", name)
	}
	if !slices.Contains(CustomLangs, a.String("lang", "")) {
		return ir.Type{}, fmt.Errorf("%q: lang %q is not cuda or ptx", name, a.String("lang", ""))
	}
	if a.String("entry", "") == "" {
		return ir.Type{}, fmt.Errorf("%q: empty entry", name)
	}
	if h := SourceHash(a.String("source", "")); a.String("hash", "") != h {
		return ir.Type{}, fmt.Errorf("%q: hash %s is not the source's (%s)", name, a.String("hash", ""), h)
	}
	if a.String("lang", "") == "cuda" {
		for _, d := range Directives(a.String("source", "")) {
			if d.ReadsFile() {
				return ir.Type{}, fmt.Errorf("%q: its source line %d reads a file (#%s %s): a kernel's source must be self-contained (a model's Go file inlines the headers of its folder)", name, d.Line, d.Keyword, d.Rest)
			}
		}
	}
	for _, k := range []string{"grid", "block"} {
		d := a.Ints(k)
		if len(d) != 3 || d[0] < 1 || d[1] < 1 || d[2] < 1 {
			return ir.Type{}, fmt.Errorf("%q: %s %v is not 3 positive ints", name, k, d)
		}
	}
	if b := a.Ints("block"); b[0]*b[1]*b[2] > 1024 {
		return ir.Type{}, fmt.Errorf("%q: block %v has more than 1024 threads", name, b)
	}
	st, err := ScalarTypes(a)
	if err != nil {
		return ir.Type{}, fmt.Errorf("%q: %v", name, err)
	}
	if n := len(a.Floats("scalars")); n != len(st) {
		return ir.Type{}, fmt.Errorf("%q: %d scalars for %d scalar_types", name, n, len(st))
	}
	dt, _ := a["dtype"].(ir.DType)
	shape := ir.Shape(a.Ints("shape"))
	for _, d := range shape {
		if d < 0 {
			return ir.Type{}, fmt.Errorf("%q: negative dimension in shape %v", name, shape)
		}
	}
	return ir.Type{DType: dt, Shape: shape.Clone()}, nil
}

func evalCustom(args []*tensor.Tensor, a ir.Attrs, out ir.Type) (res *tensor.Tensor, err error) {
	name := a.String("name", "")
	refMu.RLock()
	f := refs[refKey(name, a.String("hash", ""))]
	refMu.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("custom op %q has no Go reference function: a .gir carries the kernel but not its reference; load the model's .go file", name)
	}
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("custom op %q: the reference function panicked: %v", name, r)
		}
	}()
	in := make([]*tensor.Tensor, len(args))
	for i, t := range args {
		in[i] = t.Clone() // a reference that writes its operands must not change the interpreter's values
	}
	res = f(in, slices.Clone(a.Floats("scalars")))
	if res == nil {
		return nil, fmt.Errorf("custom op %q: the reference function returned nil", name)
	}
	if !res.Type.Equal(out) {
		return nil, fmt.Errorf("custom op %q: the reference function returned %s, want %s", name, res.Type, out)
	}
	if n := out.Shape.NumElements(); out.DType.IsFloat() && len(res.F) != n || !out.DType.IsFloat() && len(res.I) != n {
		return nil, fmt.Errorf("custom op %q: the reference function returned %d values for %s", name, max(len(res.F), len(res.I)), out)
	}
	return res, nil
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}
