package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/ir"
)

// An .onnx model's tensors are named as its file names them ("onnx::Gemm_0", "4"), on the
// command line and in the files run writes; the graph keeps its own names (onnx.Names).

// lookupInput finds the graph input a user names: by the file's name for an .onnx model (names
// non-nil), else by the graph's. The error lists the names the user may give.
func lookupInput(g *ir.Graph, names *onnx.Names, name string) (*ir.Value, error) {
	if names != nil {
		irName, ok := names.Input(name)
		if !ok {
			return nil, fmt.Errorf("the model has no input %q (inputs: %s)", name, names.InputList())
		}
		return g.Lookup(irName), nil
	}
	if v := g.Lookup(name); v != nil && v.Op == ir.OpInput {
		return v, nil
	}
	return nil, fmt.Errorf("the model has no input %q (inputs: %s)", name, valueNames(g.Inputs()))
}

// inputName is how a user knows graph input v: the file's name for an .onnx model.
func inputName(names *onnx.Names, v *ir.Value) string {
	if names != nil {
		return names.InputFile(v.Name)
	}
	return v.Name
}

// runFiles are the files run writes under its output directory, by graph name: NAME.npy per
// output and, with --save-inputs, inputs/NAME.npy per input, NAME the name a user knows the tensor
// by. A name read from an .onnx file may be no file name ("onnx::Gemm_0", "../x", "a/b"), so there
// the file's names are made safe (onnx.SafeFileNames), and run says where each went when the file
// name differs.
type runFiles struct {
	outs, ins map[string]string // graph name → path under the output directory
	user      map[string]string // path → the tensor's name as the user knows it
	names     []string          // the paths, outputs first, in the graph's order
	fromONNX  bool
}

func newRunFiles(g *ir.Graph, names *onnx.Names, saveInputs bool) runFiles {
	f := runFiles{outs: map[string]string{}, ins: map[string]string{}, user: map[string]string{}, fromONNX: names != nil}
	add := func(m map[string]string, dir string, graphNames, userNames []string) {
		safe := userNames
		if names != nil {
			safe = onnx.SafeFileNames(userNames)
		}
		for i, n := range graphNames {
			path := filepath.Join(dir, safe[i]+".npy")
			m[n], f.user[path] = path, userNames[i]
			f.names = append(f.names, path)
		}
	}
	var gn, un []string
	for _, o := range g.Outputs {
		gn = append(gn, o.Name)
		if names != nil {
			un = append(un, names.OutputFile(o.Name))
		} else {
			un = append(un, o.Name)
		}
	}
	add(f.outs, "", gn, un)
	if saveInputs {
		gn, un = nil, nil
		for _, v := range g.Inputs() {
			gn, un = append(gn, v.Name), append(un, inputName(names, v))
		}
		add(f.ins, "inputs", gn, un)
	}
	return f
}

// report says, for an .onnx model, which file holds each tensor whose file name is not its name.
func (f runFiles) report(dir string, stderr io.Writer) {
	if !f.fromONNX {
		return
	}
	for _, path := range f.names {
		if name := f.user[path]; filepath.Base(path) != name+".npy" {
			kind := "output"
			if filepath.Dir(path) == "inputs" {
				kind = "input"
			}
			fmt.Fprintf(stderr, "gcomp: %s %q is written to %s\n", kind, name, filepath.Join(dir, path))
		}
	}
}

// planNames records an .onnx model's names in the plan gcomp build writes (nil for other
// models), so that a run of the module takes and gives the file's names too.
func planNames(n *onnx.Names) *artifact.SourceNames {
	if n == nil {
		return nil
	}
	s := &artifact.SourceNames{Inputs: [][2]string{}, Outputs: [][2]string{}}
	for _, x := range n.Inputs {
		s.Inputs = append(s.Inputs, [2]string{x.ONNX, x.IR})
	}
	for _, x := range n.Outputs {
		s.Outputs = append(s.Outputs, [2]string{x.ONNX, x.IR})
	}
	return s
}

// namesOfPlan reads back what planNames recorded (the plan's validation has checked it).
func namesOfPlan(s *artifact.SourceNames) *onnx.Names {
	if s == nil {
		return nil
	}
	n := &onnx.Names{}
	for _, p := range s.Inputs {
		n.Inputs = append(n.Inputs, onnx.Name{ONNX: p[0], IR: p[1]})
	}
	for _, p := range s.Outputs {
		n.Outputs = append(n.Outputs, onnx.Name{ONNX: p[0], IR: p[1]})
	}
	return n
}
