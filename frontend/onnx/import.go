package onnx

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// The opsets of the default domain that import follows (what PyTorch 1.13 and later export; the
// changes of opsets 18 to 21 in opset21.go).
const (
	MinOpset = 7
	MaxOpset = 21
)

// Options fix what ONNX leaves open until run time.
type Options struct {
	// Shapes fixes the shapes of graph inputs (by ONNX name); it is required for an input with
	// a symbolic dimension ("batch").
	Shapes map[string][]int
	// Consts binds graph inputs (by ONNX name) to values at compile time: the inputs that decide
	// shapes (Reshape's shape, Slice's starts, ...). They are folded and are not graph inputs.
	Consts map[string]*tensor.Tensor
	// MaxShapes bounds the dynamic dims of graph inputs (by ONNX name; gcomp's --max-shape): each
	// symbolic dimension becomes a ranged dim [1, bound] named after its dim_param, shared by
	// every input with that dim_param, so the graph runs at any size in range (docs/dynamic.md).
	// Static dimensions must be given as declared.
	MaxShapes map[string][]int
	// Batch, if positive, fills the symbolic first dimension of every input not in Shapes
	// (gcomp's --batch); an error if no input has one.
	Batch int
}

// Model is an imported ONNX model.
type Model struct {
	Graph *ir.Graph
	// Weights holds the initializers that became parameters, by parameter name.
	Weights *Weights
	// Inputs maps each graph input's ONNX name to its name in Graph ("" for inputs bound by
	// Options.Consts), in the model's order; Outputs likewise for the outputs.
	Inputs, Outputs []Name
}

// Name pairs an ONNX name with the graph's (ir value names allow letters, digits, '_' and '.').
type Name struct{ ONNX, IR string }

// ImportFile imports the model at path (read as ReadModelFile reads it); external data is read
// from path's folder.
func ImportFile(path string, opt Options) (*Model, error) {
	data, err := ReadModelFile(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	return Import(path, data, dir, opt)
}

// Import imports a serialized ModelProto. file names it in messages; dir is the folder external
// data is read from ("" refuses external data). The model's Weights keep referring to data (the
// initializers' bytes are not copied), so the caller must not change data afterwards.
func Import(file string, data []byte, dir string, opt Options) (*Model, error) {
	var m onnxpb.ModelProto
	if err := unmarshalModel(data, &m); err != nil {
		return nil, &Error{File: file, Node: -1, Err: fmt.Errorf("not a valid ONNX model: %v", err)}
	}
	im := &importer{file: file, src: tensorSource{dir}, opt: opt}
	model, err := im.run(&m)
	if err != nil {
		return nil, err
	}
	return model, nil
}

type importer struct {
	file  string
	src   tensorSource
	opt   Options
	opset int
	// irVersion is the model's IR version (attributes have types from version 2).
	irVersion int64
	b         *builder
	vals      map[string]*val
	names     map[string]bool // ir names in use
	// batchUsed records that Options.Batch filled an input's first dimension.
	batchUsed bool
	// dimOf maps a dim_param to its graph dim, dimFrom a dim to the bound that declared it, and
	// maxAxes an input with --max-shape to its sizes (dynamic.go).
	dimOf   map[string]string
	dimFrom map[string]dimSource
	maxAxes map[string][]sym.Expr
}

func (im *importer) fail(err error) error { return &Error{File: im.file, Node: -1, Err: err} }

func (im *importer) run(m *onnxpb.ModelProto) (model *Model, err error) {
	im.opset, im.irVersion = -1, m.GetIrVersion()
	for _, o := range m.GetOpsetImport() {
		if d := o.GetDomain(); d == "" || d == "ai.onnx" {
			im.opset = int(o.GetVersion())
		}
	}
	switch {
	case im.opset < 0 && m.GetIrVersion() >= 3:
		var ds []string
		for _, o := range m.GetOpsetImport() {
			ds = append(ds, fmt.Sprintf("%q", o.GetDomain()))
		}
		if len(ds) == 0 {
			return nil, im.fail(fmt.Errorf("the model imports no opset"))
		}
		return nil, im.fail(unsupportedf("domains %s are not supported (supported: the default domain, ai.onnx)", strings.Join(ds, ", ")))
	case im.opset < 0:
		im.opset = 1
	}
	if im.opset < 1 || im.opset > MaxOpset {
		return nil, im.fail(unsupportedf("opset %d is not supported (supported: %d to %d)", im.opset, MinOpset, MaxOpset))
	}
	gp := m.GetGraph()
	if gp == nil {
		return nil, im.fail(fmt.Errorf("the model has no graph"))
	}
	im.b = &builder{g: ir.NewGraph(im.irName(graphName(gp.GetName()), true)), weights: &Weights{src: im.src, m: map[string]*weight{}}, src: im.src}
	im.b.g.File = im.file
	im.vals = map[string]*val{}
	im.names = map[string]bool{}
	model = &Model{Graph: im.b.g, Weights: im.b.weights}

	for name := range im.opt.Consts {
		if !slices.ContainsFunc(gp.GetInput(), func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == name }) {
			return nil, im.fail(fmt.Errorf("--const %s: the model has no input %q (inputs: %s)", name, name, inputList(gp)))
		}
	}
	for name := range im.opt.Shapes {
		if !slices.ContainsFunc(gp.GetInput(), func(v *onnxpb.ValueInfoProto) bool { return v.GetName() == name }) {
			return nil, im.fail(fmt.Errorf("--shape %s: the model has no input %q (inputs: %s)", name, name, inputList(gp)))
		}
	}
	for _, t := range gp.GetInitializer() {
		w, err := im.src.initializer(t)
		if err != nil {
			return nil, im.fail(fmt.Errorf("initializer %q: %w", t.GetName(), err))
		}
		if t.GetName() == "" {
			return nil, im.fail(fmt.Errorf("an initializer has no name"))
		}
		if _, dup := im.vals[t.GetName()]; dup {
			return nil, im.fail(fmt.Errorf("initializer %q is given twice", t.GetName()))
		}
		im.vals[t.GetName()] = &val{t: w.t, w: w, param: im.irName(t.GetName(), false)}
	}
	if len(gp.GetSparseInitializer()) > 0 {
		return nil, im.fail(unsupportedf("sparse initializers are not supported"))
	}
	if err := im.declareDims(gp); err != nil {
		return nil, im.fail(err)
	}
	inputs := map[string]bool{}
	for _, in := range gp.GetInput() {
		name := in.GetName()
		if inputs[name] {
			return nil, im.fail(fmt.Errorf("input %q is declared twice", name))
		}
		inputs[name] = true
		if x, ok := im.vals[name]; ok {
			// An initializer listed as an input too (IR version < 4): its default value is used,
			// and must be of the type the input declares.
			if err := checkInitializerInput(in, x.t); err != nil {
				return nil, im.fail(fmt.Errorf("input %q: its initializer is %s, %w", name, x.t, err))
			}
			continue
		}
		x, err := im.input(in)
		if err != nil {
			return nil, im.fail(fmt.Errorf("input %q: %w", name, err))
		}
		im.vals[name] = x
		irName := ""
		if x.v != nil {
			irName = x.v.Name
		}
		model.Inputs = append(model.Inputs, Name{name, irName})
	}
	if im.opt.Batch > 0 && !im.batchUsed {
		return nil, im.fail(fmt.Errorf("--batch %d: no input without --shape has a symbolic first dimension to fill", im.opt.Batch))
	}
	im.b.productWeights = productWeights(gp)
	im.b.dequantized = dequantizedOnly(gp)
	im.b.paramName = func(s string) string { return im.irName(s, false) }
	for i, np := range gp.GetNode() {
		if err := im.node(i, np); err != nil {
			return nil, &Error{File: im.file, Node: i, Op: np.GetOpType(), Name: np.GetName(), Err: err}
		}
	}
	im.b.pos = ""
	for _, out := range gp.GetOutput() {
		x := im.vals[out.GetName()]
		if x == nil {
			return nil, im.fail(fmt.Errorf("output %q is not computed by any node", out.GetName()))
		}
		if err := checkDeclared(out, x.t); err != nil {
			return nil, im.fail(fmt.Errorf("output %q: %w", out.GetName(), err))
		}
		name := im.irName(out.GetName(), true)
		im.b.g.SetOutput(name, im.b.materialize(x))
		model.Outputs = append(model.Outputs, Name{out.GetName(), name})
	}
	if len(gp.GetOutput()) == 0 {
		return nil, im.fail(fmt.Errorf("the graph has no outputs"))
	}
	prune(im.b.g)
	for name := range im.b.weights.m {
		if v := im.b.g.Lookup(name); v == nil || v.Op != ir.OpParam {
			delete(im.b.weights.m, name)
		}
	}
	if err := ops.Verify(im.b.g); err != nil {
		return nil, im.fail(fmt.Errorf("the imported graph does not verify: %v", err))
	}
	return model, nil
}

// inputList lists a graph's inputs by the file's names, quoted, for messages (initializers listed
// as inputs left out).
func inputList(gp *onnxpb.GraphProto) string {
	inits := map[string]bool{}
	for _, t := range gp.GetInitializer() {
		inits[t.GetName()] = true
	}
	var q []string
	for _, in := range gp.GetInput() {
		if !inits[in.GetName()] {
			q = append(q, fmt.Sprintf("%q", in.GetName()))
		}
	}
	if len(q) == 0 {
		return "none"
	}
	return strings.Join(q, ", ")
}

func graphName(s string) string {
	if s == "" {
		return "model"
	}
	return s
}

// irName turns an ONNX name into an unused ir name: characters other than letters, digits, '_'
// and '.' become '_' ("onnx::Conv_3" → "onnx__Conv_3"); ident names start with a letter.
func (im *importer) irName(s string, ident bool) string {
	var sb strings.Builder
	for _, r := range s {
		if r == '_' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	n := sb.String()
	if n == "" || n[0] == '.' || (ident && '0' <= n[0] && n[0] <= '9') || strings.Trim(n, "0123456789") == "" {
		n = "v" + n
	}
	base := n
	for i := 2; im.names != nil && im.names[n]; i++ {
		n = fmt.Sprintf("%s_%d", base, i)
	}
	if im.names != nil {
		im.names[n] = true
	}
	return n
}

// input declares a graph input, or binds it to its --const value.
func (im *importer) input(in *onnxpb.ValueInfoProto) (*val, error) {
	tt := in.GetType().GetTensorType()
	if tt == nil {
		return nil, unsupportedf("only tensor inputs are supported (this one is %s)", typeKind(in.GetType()))
	}
	d, err := dtypeOf(tt.GetElemType())
	if err != nil {
		return nil, err
	}
	name := in.GetName()
	if c, ok := im.opt.Consts[name]; ok {
		if c.Type.DType != d {
			return nil, fmt.Errorf("--const value is %s, the model declares %s", c.Type.DType, d)
		}
		if err := checkDims(tt.GetShape(), c.Type.Shape); err != nil {
			return nil, fmt.Errorf("--const value: %w", err)
		}
		return &val{t: c.Type, c: c}, nil
	}
	if _, fixed := im.opt.Shapes[name]; !fixed {
		if t, ok, err := im.symInput(in, d); err != nil {
			return nil, fmt.Errorf("--max-shape: %w", err)
		} else if ok {
			v := im.b.g.Input(im.irName(name, false), t, nil)
			return &val{t: v.Type, v: v, deps: []string{name}}, nil
		}
	}
	var shape ir.Shape
	if s, ok := im.opt.Shapes[name]; ok {
		shape = ir.Shape(slices.Clone(s))
		if err := checkDims(tt.GetShape(), shape); err != nil {
			return nil, fmt.Errorf("--shape: %w", err)
		}
	} else {
		if tt.GetShape() == nil {
			return nil, fmt.Errorf("the model does not give its shape: fix it with --shape %s=D1xD2x...", name)
		}
		for i, dim := range tt.GetShape().GetDim() {
			switch {
			case dim.GetDimParam() != "" && i == 0 && im.opt.Batch > 0:
				shape = append(shape, im.opt.Batch)
				im.batchUsed = true
				continue
			case dim.GetDimParam() != "":
				ex := exampleShape(tt.GetShape())
				return nil, fmt.Errorf("dimension %d is symbolic (%q): fix it with --shape %s=%s, or bound it with --max-shape %s=%s", i, dim.GetDimParam(), name, ex, name, ex)
			case dim.GetValue() == nil || dim.GetDimValue() < 0:
				ex := exampleShape(tt.GetShape())
				return nil, fmt.Errorf("dimension %d is unknown: fix it with --shape %s=%s, or bound it with --max-shape %s=%s", i, name, ex, name, ex)
			}
			shape = append(shape, int(dim.GetDimValue()))
		}
	}
	if _, err := shapeOf(int64s(shape)); err != nil {
		return nil, err
	}
	v := im.b.g.Input(im.irName(name, false), ir.Type{DType: d, Shape: shape}, nil)
	return &val{t: v.Type, v: v, deps: []string{name}}, nil
}

func int64s(s []int) []int64 {
	r := make([]int64, len(s))
	for i, d := range s {
		r[i] = int64(d)
	}
	return r
}

func exampleShape(s *onnxpb.TensorShapeProto) string {
	parts := make([]string, len(s.GetDim()))
	for i, d := range s.GetDim() {
		if d.GetDimParam() == "" && d.GetValue() != nil {
			parts[i] = fmt.Sprint(d.GetDimValue())
		} else {
			parts[i] = "N"
		}
	}
	if len(parts) == 0 {
		return "(a scalar: leave out)"
	}
	return strings.Join(parts, "x")
}

// checkDims checks a given shape against the model's declaration (fixed dims must agree).
func checkDims(decl *onnxpb.TensorShapeProto, s ir.Shape) error {
	if decl == nil {
		return nil
	}
	if len(decl.GetDim()) != len(s) {
		return fmt.Errorf("shape %v has rank %d, the model declares rank %d", []int(s), len(s), len(decl.GetDim()))
	}
	for i, d := range decl.GetDim() {
		if d.GetDimParam() == "" && d.GetValue() != nil && d.GetDimValue() != int64(s[i]) {
			return fmt.Errorf("shape %v: dimension %d is %d, the model declares %d", []int(s), i, s[i], d.GetDimValue())
		}
	}
	return nil
}

// checkDeclared compares an output's computed type with the model's declaration, where given.
func checkDeclared(out *onnxpb.ValueInfoProto, t ir.Type) error {
	tt := out.GetType().GetTensorType()
	if tt == nil {
		if out.GetType() != nil && out.GetType().GetValue() != nil {
			return unsupportedf("only tensor outputs are supported (this one is %s)", typeKind(out.GetType()))
		}
		return nil
	}
	if d, ok, err := declaredDType(tt); err != nil {
		return err
	} else if ok && d != t.DType {
		return fmt.Errorf("computed %s, the model declares %s", t, d)
	}
	if err := checkDims(tt.GetShape(), t.Shape); err != nil {
		return fmt.Errorf("computed %s: %v", t, err)
	}
	return nil
}

// checkInitializerInput checks a graph input's declaration against the initializer of its name,
// which gives it its value (the checker's shape inference refuses a disagreement).
func checkInitializerInput(in *onnxpb.ValueInfoProto, t ir.Type) error {
	tt := in.GetType().GetTensorType()
	if tt == nil {
		return nil
	}
	if d, ok, err := declaredDType(tt); err != nil {
		return err
	} else if ok && d != t.DType {
		return fmt.Errorf("the input declares %s", d)
	}
	return checkDims(tt.GetShape(), t.Shape)
}

// declaredDType is the element type a declaration gives; ok is false where it gives none.
func declaredDType(tt *onnxpb.TypeProto_Tensor) (d ir.DType, ok bool, err error) {
	if tt.GetElemType() == 0 {
		return d, false, nil
	}
	d, err = dtypeOf(tt.GetElemType())
	return d, err == nil, err
}

func typeKind(t *onnxpb.TypeProto) string {
	switch {
	case t.GetSequenceType() != nil:
		return "a sequence"
	case t.GetMapType() != nil:
		return "a map"
	case t.GetOptionalType() != nil:
		return "an optional"
	case t.GetSparseTensorType() != nil:
		return "a sparse tensor"
	}
	return "a value of unknown type"
}

// prune drops values no output needs (an initializer only a shape used, a Dropout's unused
// mask); graph inputs stay, so the model's inputs are what the user binds.
func prune(g *ir.Graph) {
	live := map[*ir.Value]bool{}
	for _, o := range g.Outputs {
		live[o.Value] = true
	}
	for i := len(g.Values) - 1; i >= 0; i-- {
		v := g.Values[i]
		if live[v] {
			for _, a := range v.Args {
				live[a] = true
			}
		}
	}
	kept := g.Values[:0]
	for _, v := range g.Values {
		if live[v] || v.Op == ir.OpInput {
			kept = append(kept, v)
		}
	}
	g.Values = kept
}
