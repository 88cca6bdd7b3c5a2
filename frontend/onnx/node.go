package onnx

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/tensor"
)

// node is one ONNX node being converted.
type node struct {
	*builder
	p     *onnxpb.NodeProto
	idx   int
	opset int
	in    []*val // nil for an omitted optional input
	attrs map[string]*onnxpb.AttributeProto
}

// converter turns a node into gcomp values, one per ONNX output (nil for an output it does not
// produce).
type converter func(n *node) ([]*val, error)

func (im *importer) node(i int, p *onnxpb.NodeProto) (err error) {
	im.b.pos = fmt.Sprintf("%s:node%d", baseName(im.file), i)
	conv, ok := converters[p.GetOpType()]
	if d := p.GetDomain(); d == contribDomain {
		if conv, ok = contribConverters[p.GetOpType()]; !ok {
			return unsupportedf("%s of domain %q is not supported (supported there: MatMulNBits)", p.GetOpType(), d)
		}
	} else if d != "" && d != "ai.onnx" {
		return unsupportedf("domain %q is not supported (supported: the default domain, ai.onnx, and %s's MatMulNBits)", d, contribDomain)
	}
	if !ok {
		if why, ok := refused[p.GetOpType()]; ok {
			return unsupportedf("%s is not supported: %s", p.GetOpType(), why)
		}
		return unsupportedf("%s is not supported", p.GetOpType())
	}
	if im.opset < MinOpset && !oldOpsetOK[p.GetOpType()] {
		return unsupportedf("%s at opset %d is not supported (supported: opsets %d to %d)", p.GetOpType(), im.opset, MinOpset, MaxOpset)
	}
	set := func(name string) bool {
		return slices.ContainsFunc(p.GetAttribute(), func(a *onnxpb.AttributeProto) bool { return a.GetName() == name })
	}
	if err := checkLater(p.GetOpType(), im.opset, set); p.GetDomain() != contribDomain && err != nil {
		return err
	}
	if err := checkAttrs(p.GetOpType(), im.opset, im.irVersion, p.GetAttribute()); p.GetDomain() != contribDomain && err != nil {
		return err
	}
	n := &node{builder: im.b, p: p, idx: i, opset: im.opset, attrs: map[string]*onnxpb.AttributeProto{}}
	for _, a := range p.GetAttribute() {
		if a.GetRefAttrName() != "" {
			return unsupportedf("attribute references (in functions) are not supported")
		}
		n.attrs[a.GetName()] = a
	}
	for _, name := range p.GetInput() {
		if name == "" {
			n.in = append(n.in, nil)
			continue
		}
		x, ok := im.vals[name]
		if !ok {
			return fmt.Errorf("input %q is not defined before this node", name)
		}
		n.in = append(n.in, x)
	}
	defer func() {
		if r := recover(); r != nil {
			ie, ok := r.(internalError)
			if !ok {
				panic(r)
			}
			err = ie.err
		}
	}()
	outs, err := conv(n)
	if err != nil {
		return err
	}
	for j, name := range p.GetOutput() {
		if name == "" {
			continue
		}
		if j >= len(outs) || outs[j] == nil {
			return unsupportedf("output %d (%q) is not supported", j, name)
		}
		if _, dup := im.vals[name]; dup {
			return fmt.Errorf("output %q is defined twice", name)
		}
		im.vals[name] = outs[j]
	}
	return nil
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// oldOpsetOK lists the ops whose definitions before opset 7 mean what the converters implement
// (no legacy broadcast or consumed_inputs attributes).
var oldOpsetOK = map[string]bool{"Abs": true, "Neg": true, "Exp": true, "Log": true, "Sqrt": true,
	"Ceil": true, "Floor": true, "Sigmoid": true, "Relu": true, "Tanh": true, "Not": true,
	"Elu": true, "Selu": true, "HardSigmoid": true, "Softplus": true, "Softsign": true, "LeakyRelu": true,
	"GlobalAveragePool": true, "GlobalMaxPool": true, "InstanceNormalization": true, "Identity": true,
	"ReduceSum": true, "ReduceMean": true, "ReduceMax": true, "ReduceMin": true, "ReduceProd": true,
	"ReduceL1": true, "ReduceL2": true, "ReduceLogSum": true, "ReduceLogSumExp": true, "ReduceSumSquare": true,
	"Transpose": true, "Flatten": true, "Shape": true, "Size": true, "Constant": true, "MatMul": true,
	"Softmax": true, "LogSoftmax": true, "Squeeze": true, "Unsqueeze": true, "Gather": true}

// arg returns input i, nil if absent or omitted.
func (n *node) arg(i int) *val {
	if i < len(n.in) {
		return n.in[i]
	}
	return nil
}

// need returns input i or an error if it is absent.
func (n *node) need(i int) (*val, error) {
	if x := n.arg(i); x != nil {
		return x, nil
	}
	return nil, fmt.Errorf("input %d is missing", i)
}

// inputs checks the number of inputs given.
func (n *node) inputs(lo, hi int) error {
	if len(n.in) < lo || len(n.in) > hi {
		if lo == hi {
			return fmt.Errorf("has %d inputs, want %d", len(n.in), lo)
		}
		return fmt.Errorf("has %d inputs, want %d to %d", len(n.in), lo, hi)
	}
	for i := 0; i < lo; i++ {
		if n.in[i] == nil {
			return fmt.Errorf("input %d is missing", i)
		}
	}
	return nil
}

// known returns the compile-time value of input i, which decides a shape (what says which).
func (n *node) known(i int, what string) (*tensor.Tensor, error) {
	x, err := n.need(i)
	if err != nil {
		return nil, err
	}
	if x.sizes != nil {
		return nil, sizesRefused(x, fmt.Sprintf("the %s of node %d (%s %q)", what, n.idx, n.p.GetOpType(), n.p.GetName()))
	}
	if x.c != nil {
		return x.c, nil
	}
	if x.w != nil {
		return n.src.value(x.w)
	}
	if len(x.deps) > 0 {
		return nil, &NeedConst{Input: x.deps[0], Use: fmt.Sprintf("the %s of node %d (%s %q)", what, n.idx, n.p.GetOpType(), n.p.GetName())}
	}
	return nil, unsupportedf("%s (input %d) is computed at run time, but it decides the output's shape, which gcomp fixes at compile time", what, i)
}

// knownInts is known for an integer list (a shape, axes, pads).
func (n *node) knownInts(i int, what string) ([]int, error) {
	c, err := n.known(i, what)
	if err != nil {
		return nil, err
	}
	if c.I == nil {
		return nil, fmt.Errorf("%s is %s, want an integer tensor", what, c.Type)
	}
	out := make([]int, len(c.I))
	for j, v := range c.I {
		out[j] = int(v)
	}
	return out, nil
}

func (n *node) has(name string) bool { _, ok := n.attrs[name]; return ok }

func (n *node) attrInt(name string, def int) int {
	if a, ok := n.attrs[name]; ok {
		return int(a.GetI())
	}
	return def
}

func (n *node) attrInts(name string) ([]int, bool) {
	a, ok := n.attrs[name]
	if !ok {
		return nil, false
	}
	out := make([]int, len(a.GetInts()))
	for i, v := range a.GetInts() {
		out[i] = int(v)
	}
	return out, true
}

func (n *node) attrFloat(name string, def float64) float64 {
	if a, ok := n.attrs[name]; ok {
		return float64(a.GetF())
	}
	return def
}

func (n *node) attrFloats(name string) ([]float64, bool) {
	a, ok := n.attrs[name]
	if !ok {
		return nil, false
	}
	out := make([]float64, len(a.GetFloats()))
	for i, v := range a.GetFloats() {
		out[i] = float64(v)
	}
	return out, true
}

func (n *node) attrString(name, def string) string {
	if a, ok := n.attrs[name]; ok {
		return string(a.GetS())
	}
	return def
}

// attrChoice returns a string attribute that must be one of the supported values.
func (n *node) attrChoice(name, def string, supported ...string) (string, error) {
	s := n.attrString(name, def)
	for _, v := range supported {
		if s == v {
			return s, nil
		}
	}
	return "", unsupportedf("%s %q is not supported (supported: %s)", name, s, strings.Join(supported, ", "))
}

// axis normalizes a possibly negative axis of a rank-r tensor.
func axis(a, r int) (int, error) {
	if a < -r || a >= r {
		return 0, fmt.Errorf("axis %d is out of range for rank %d", a, r)
	}
	if a < 0 {
		a += r
	}
	return a, nil
}

// axesOf normalizes, sorts and deduplicates-checks axes.
func axesOf(as []int, r int) ([]int, error) {
	out := make([]int, len(as))
	seen := map[int]bool{}
	for i, a := range as {
		x, err := axis(a, r)
		if err != nil {
			return nil, err
		}
		if seen[x] {
			return nil, fmt.Errorf("axis %d is repeated", a)
		}
		seen[x] = true
		out[i] = x
	}
	sort.Ints(out)
	return out, nil
}

func allAxes(r int) []int {
	out := make([]int, r)
	for i := range out {
		out[i] = i
	}
	return out
}

func one(x *val, err error) ([]*val, error) {
	if err != nil {
		return nil, err
	}
	return []*val{x}, nil
}
