package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/tensor"
)

// onnxFlags are --shape and --const, which fix what an .onnx model leaves to run time.
type onnxFlags struct {
	shapes, consts *multiFlag
}

func addONNXFlags(fs *flag.FlagSet) onnxFlags {
	f := onnxFlags{shapes: &multiFlag{}, consts: &multiFlag{}}
	fs.Var(f.shapes, "shape", "fix an .onnx model input's shape, NAME=1x3x224x224 (repeatable)")
	fs.Var(f.consts, "const", "bind an .onnx model input that decides shapes at compile time, NAME=FILE.pb|FILE.npy (repeatable)")
	return f
}

func (f onnxFlags) options() (onnx.Options, error) {
	opt := onnx.Options{Shapes: map[string][]int{}, Consts: map[string]*tensor.Tensor{}}
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
