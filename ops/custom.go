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

func init() {
	register(&Op{Name: CustomOp, Arity: Variadic, Class: Custom, Infer: inferCustom, Eval: evalCustom,
		Attrs: []AttrSpec{
			{"name", AttrString, false}, {"entry", AttrString, false}, {"lang", AttrString, false},
			{"file", AttrString, false}, {"source", AttrString, false}, {"hash", AttrString, false},
			{"dtype", AttrDType, false}, {"shape", AttrInts, false},
			{"grid", AttrInts, false}, {"block", AttrInts, false},
			{"scalars", AttrFloats, true}, {"scalar_types", AttrString, true},
		},
		Doc: "A user's own kernel: `source` (CUDA C if lang is \"cuda\", compiled by NVRTC; or PTX) from `file`, " +
			"whose .entry `entry` takes one pointer per operand, then one to the result (dtype, shape), then the " +
			"scalars (float values, of the space-separated scalar_types i32, i64, f32, f64), and runs on grid × block " +
			"(3 positive ints each). hash is the source's SHA-256. Its semantics are the Go reference function the " +
			"model registered under name and hash; a graph read from a .gir has none, and evaluating it is an error. Never fused."})
}

func inferCustom(args []ir.Type, a ir.Attrs) (ir.Type, error) {
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
