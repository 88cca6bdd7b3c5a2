package load

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Model is a loaded model: its graph and the weights the file carries.
type Model struct {
	Graph *ir.Graph
	// Weights are an ONNX model's initializers, the values of its parameters (nil for .go and
	// .gir models, whose parameters carry initializers, not values).
	Weights *onnx.Weights
	// Names are an ONNX model's inputs and outputs by the file's names and the graph's (nil for
	// .go and .gir models, whose names are the graph's): users name tensors as the file does.
	Names *onnx.Names
}

func onnxSource(filename string, src []byte, opt Options) (*Model, error) {
	m, err := onnx.Import(filename, src, filepath.Dir(filename), opt.ONNX)
	if err != nil {
		return nil, err
	}
	return &Model{Graph: m.Graph, Weights: m.Weights, Names: m.Names()}, nil
}

// ParseShape parses a --shape value, NAME=D1xD2x... ("x=1x3x224x224"; "x=" for a scalar).
func ParseShape(spec string) (string, []int, error) {
	name, dims, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return "", nil, fmt.Errorf("--shape %q: want NAME=D1xD2x... (for example x=1x3x224x224)", spec)
	}
	shape := []int{}
	if dims != "" {
		for _, d := range strings.Split(dims, "x") {
			n, err := strconv.Atoi(d)
			if err != nil || n < 0 || n > ir.MaxElements {
				return "", nil, fmt.Errorf("--shape %q: %q is not a dimension", spec, d)
			}
			shape = append(shape, n)
		}
	}
	return name, shape, nil
}

// ReadTensorFile reads a tensor from an ONNX TensorProto file (.pb, as ONNX's test data holds
// them) or a NumPy .npy file.
func ReadTensorFile(path string) (*tensor.Tensor, error) {
	if strings.EqualFold(filepath.Ext(path), ".pb") {
		return onnx.ReadTensorFile(path)
	}
	t, err := tensor.ReadNPYFile(path)
	if err != nil {
		return nil, err
	}
	return t, nil
}
