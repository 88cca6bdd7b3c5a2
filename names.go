package gcomp

import (
	"github.com/gcomp/gcomp/ir"
)

// An .onnx model's inputs and outputs are named as its file names them ("onnx::Gemm_0", "4"):
// Inputs, Outputs, Session.Run's maps and its errors use those names, while the graph keeps its
// own (which ir restricts to identifiers; see onnx.Names). Other models use the graph's names.

// inputName is the name users give graph input v.
func (m *Model) inputName(v *ir.Value) string {
	if m.names == nil {
		return v.Name
	}
	return m.names.InputFile(v.Name)
}

// outputName is the name users receive graph output name under.
func (m *Model) outputName(name string) string {
	if m.names == nil {
		return name
	}
	return m.names.OutputFile(name)
}

// graphInputs rekeys checked inputs from the users' names to the graph's.
func (m *Model) graphInputs(inputs map[string]*Tensor) map[string]*Tensor {
	if m.names == nil {
		return inputs
	}
	r := make(map[string]*Tensor, len(inputs))
	for _, v := range m.graph.Inputs() {
		r[v.Name] = inputs[m.inputName(v)]
	}
	return r
}

// userOutputs rekeys a run's outputs from the graph's names to the users'.
func (m *Model) userOutputs(outs map[string]*Tensor) map[string]*Tensor {
	if m.names == nil {
		return outs
	}
	r := make(map[string]*Tensor, len(outs))
	for name, t := range outs {
		r[m.outputName(name)] = t
	}
	return r
}
