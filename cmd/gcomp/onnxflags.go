package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/tensor"
)

// onnxFlags are --shape and --const, which fix what an .onnx model leaves to run time, and
// --max-shape, which bounds it instead (one build for every size in range).
type onnxFlags struct {
	shapes, consts, maxShapes *multiFlag
}

func addONNXFlags(fs *flag.FlagSet) onnxFlags {
	f := onnxFlags{shapes: &multiFlag{}, consts: &multiFlag{}, maxShapes: &multiFlag{}}
	fs.Var(f.shapes, "shape", "fix an .onnx model input's shape, NAME=1x3x224x224 (repeatable)")
	fs.Var(f.maxShapes, "max-shape", "bound an .onnx model input's dynamic dims, NAME=8x3x224x224: each becomes a dim in [1, bound] shared by its dim_param, built once for every size in range (repeatable)")
	fs.Var(f.consts, "const", "bind an .onnx model input that decides shapes at compile time, NAME=FILE.pb|FILE.npy (repeatable)")
	return f
}

func (f onnxFlags) options() (onnx.Options, error) {
	opt := onnx.Options{Shapes: map[string][]int{}, Consts: map[string]*tensor.Tensor{}, MaxShapes: map[string][]int{}}
	for _, spec := range *f.shapes {
		name, shape, err := load.ParseShape(spec)
		if err != nil {
			return opt, fmt.Errorf("gcomp: %v", err)
		}
		if _, dup := opt.Shapes[name]; dup {
			return opt, fmt.Errorf("gcomp: --shape %s given twice", name)
		}
		opt.Shapes[name] = shape
	}
	for _, spec := range *f.maxShapes {
		name, shape, err := load.ParseShape(spec)
		if err != nil {
			return opt, fmt.Errorf("gcomp: --max-shape%s", strings.TrimPrefix(err.Error(), "--shape"))
		}
		if _, dup := opt.MaxShapes[name]; dup {
			return opt, fmt.Errorf("gcomp: --max-shape %s given twice", name)
		}
		opt.MaxShapes[name] = shape
	}
	for _, spec := range *f.consts {
		name, file, ok := strings.Cut(spec, "=")
		if !ok || name == "" || file == "" {
			return opt, fmt.Errorf("gcomp: --const %q: want NAME=FILE.pb or NAME=FILE.npy", spec)
		}
		if _, dup := opt.Consts[name]; dup {
			return opt, fmt.Errorf("gcomp: --const %s given twice", name)
		}
		t, err := load.ReadTensorFile(file)
		if err != nil {
			return opt, fmt.Errorf("gcomp: --const %s: %v", name, err)
		}
		opt.Consts[name] = t
	}
	return opt, nil
}
