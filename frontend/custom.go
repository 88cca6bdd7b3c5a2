package frontend

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// HostTensor is the host tensor a custom op's reference function computes on: Type, and
// the elements in row-major order in F (float dtypes, as float64) or I (integer dtypes).
type HostTensor = tensor.Tensor

// NewHostTensor returns a zero host tensor of type t, for a reference function's result.
func NewHostTensor(t ir.Type) *HostTensor { return tensor.New(t) }

// Scalar is a scalar argument of a custom kernel.
type Scalar struct {
	DType ir.DType // I32, I64, F32 or F64
	Value float64
}

// IntArg is an i32 scalar argument (a C int); FloatArg an f32 one (a C float). Other
// dtypes: Scalar{DType: I64, Value: v}.
func IntArg(v int) Scalar       { return Scalar{ir.I32, float64(v)} }
func FloatArg(v float64) Scalar { return Scalar{ir.F32, v} }

// Kernel declares a custom op: a kernel of the user's own, in CUDA C (compiled by NVRTC
// when the model is built) or PTX. The entry takes a pointer to each input, then a pointer
// to the result, then the scalars:
//
//	extern "C" __global__ void swish(const float* x, float* y, int n)
//
// Reference defines what it computes, for the reference interpreter and `gcomp check`.
type Kernel struct {
	Name   string // the op's name in messages and kernel names, an identifier: "swish"
	Source string // the source inline, or
	File   string // a file beside the model ("swish.cu"; a .ptx file is PTX), inside its folder (WithDir; default: the folder of the Go file calling Custom); CUDA C's #includes are inlined from that folder
	PTX    bool   // Source is PTX, not CUDA C
	Entry  string // the __global__ function (extern "C"); default Name
	// Output is the result's type; zero: the first input's.
	Output ir.Type
	// Grid and Block are the launch geometry. A zero Grid means one thread per element of
	// the result, in blocks of Block[0] threads (default 256).
	Grid, Block [3]int
	Scalars     []Scalar
	// Reference computes the result from the inputs' values and the scalars' (as float64).
	Reference func(inputs []*HostTensor, scalars []float64) *HostTensor
	// Backward[i], if given, is the gradient with respect to input i: a custom kernel whose
	// inputs are this op's inputs followed by the gradient of its result, and whose result
	// (Output default: input i's type) is the gradient of input i. Training through an input
	// without one fails with an error naming the op. At most ops.MaxCustomGrads inputs.
	Backward []Kernel
}

// maxSourceBytes bounds a kernel source file.
const maxSourceBytes = 4 << 20

// Custom applies the custom op k to inputs.
func (b *Builder) Custom(k Kernel, inputs ...*Tensor) *Tensor {
	s := b.st
	what := fmt.Sprintf("custom op %q", k.Name)
	for _, in := range inputs {
		s.own(in, what)
	}
	out := k.Output
	if out.DType == 0 {
		if len(inputs) == 0 {
			s.failf("%s: no inputs, so give its Output type", what)
		}
		out = inputs[0].v.Type
	}
	attrs := s.kernelAttrs(k, out)
	if len(k.Backward) > len(inputs) {
		s.failf("%s: %d Backward kernels for %d inputs", what, len(k.Backward), len(inputs))
	}
	for i, bk := range k.Backward {
		if bk.Name == "" && bk.Source == "" && bk.File == "" {
			continue // no gradient for input i
		}
		if len(bk.Backward) > 0 {
			s.failf("%s: Backward[%d] has Backward kernels of its own", what, i)
		}
		if bk.Output.DType == 0 {
			bk.Output = inputs[i].v.Type
		}
		for key, v := range s.kernelAttrs(bk, bk.Output) {
			attrs[ops.GradAttr(i, key)] = v
		}
	}
	return s.op(ops.CustomOp, attrs, inputs...)
}

// kernelAttrs are the custom op attributes of k with result type out; it registers k's
// reference.
func (s *state) kernelAttrs(k Kernel, out ir.Type) ir.Attrs {
	what := fmt.Sprintf("custom op %q", k.Name)
	if k.Reference == nil {
		s.failf("%s: no Reference function: gcomp checks the kernel against it", what)
	}
	src, file, lang := k.Source, k.File, "cuda"
	switch {
	case (src == "") == (file == ""):
		s.failf("%s: give the kernel's Source or its File, not both or neither", what)
	case file != "":
		var err error
		if src, file, err = s.readSource(file); err != nil {
			s.failf("%s: %v", what, err)
		}
		if strings.EqualFold(filepath.Ext(file), ".ptx") {
			lang = "ptx"
		}
	default:
		file = k.Name + ".inline.cu"
		if k.PTX {
			file = k.Name + ".inline.ptx"
		}
	}
	if k.PTX {
		lang = "ptx"
	}
	if lang == "cuda" {
		var err error
		if src, err = inlineIncludes(s.modelDir(), src, file); err != nil {
			s.failf("%s: %v", what, err)
		}
	}
	entry := k.Entry
	if entry == "" {
		entry = k.Name
	}
	grid, block := k.Grid, k.Block
	if err := checkBlock(block, grid == [3]int{}); err != nil {
		s.failf("%s: %v", what, err)
	}
	if grid == ([3]int{}) {
		per := block[0]
		if per == 0 {
			per = 256
		}
		n := max(out.Shape.NumElements(), 1)
		grid, block = [3]int{(n + per - 1) / per, 1, 1}, [3]int{per, 1, 1}
	}
	for d := 1; d < 3; d++ {
		if block[d] == 0 {
			block[d] = 1 // Block{128} is {128, 1, 1}
		}
	}
	var scalars []float64
	var types []string
	for _, sc := range k.Scalars {
		scalars = append(scalars, sc.Value)
		types = append(types, sc.DType.String())
	}
	hash := ops.SourceHash(src)
	attrs := ir.Attrs{"name": k.Name, "entry": entry, "lang": lang, "file": file, "source": src, "hash": hash,
		"dtype": out.DType, "shape": []int(out.Shape.Clone()), "grid": grid[:], "block": block[:]}
	if len(scalars) > 0 {
		attrs["scalars"], attrs["scalar_types"] = scalars, strings.Join(types, " ")
	}
	ops.RegisterReference(k.Name, hash, ops.Reference(k.Reference))
	return attrs
}

// checkBlock refuses a Block with a negative dimension, or a zero one before a given one: zero
// trailing dimensions are 1 ({128} is {128, 1, 1}), and Block[0] may be zero only when the Grid
// is too (the default, 256 threads a block).
func checkBlock(block [3]int, defaultGrid bool) error {
	for d := range 3 {
		if block[d] < 0 {
			return fmt.Errorf("Block %v: dimension %d is negative; each must be positive", block, d)
		}
	}
	for d := range 3 {
		if block[d] == 0 && block != [3]int{} && (d == 0 || slices.ContainsFunc(block[d+1:], func(n int) bool { return n != 0 })) {
			return fmt.Errorf("Block %v: dimension %d is zero; each must be positive (zero trailing dimensions are 1)", block, d)
		}
	}
	if block[0] == 0 && !defaultGrid {
		return fmt.Errorf("Block %v: a kernel with a Grid needs its Block too", block)
	}
	return nil
}

// modelDir is the model's folder, where kernel sources and their headers are read.
func (s *state) modelDir() string {
	if s.dir != "" {
		return s.dir
	}
	return callerDir()
}

// readSource reads a kernel source file named relative to the model's folder, refusing
// one outside it, and returns its text and its path relative to the folder.
func (s *state) readSource(name string) (string, string, error) {
	if filepath.IsAbs(name) {
		return "", "", fmt.Errorf("File %q: give a path relative to the model's folder", name)
	}
	dir := s.modelDir()
	rel := filepath.Clean(filepath.FromSlash(name))
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", "", fmt.Errorf("File %q is outside the model's folder", name)
	}
	path := filepath.Join(dir, rel)
	// A symbolic link may lead out of the folder too.
	realDir, err1 := filepath.EvalSymlinks(dir)
	real, err2 := filepath.EvalSymlinks(path)
	if err2 != nil {
		return "", "", fmt.Errorf("File %q: no such file beside the model", name)
	}
	if err1 == nil {
		if r, err := filepath.Rel(realDir, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return "", "", fmt.Errorf("File %q leads outside the model's folder", name)
		}
	}
	f, st, err := openSource(path, fmt.Sprintf("File %q", name))
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	if st.Size() > maxSourceBytes {
		return "", "", fmt.Errorf("File %q is larger than %d bytes", name, maxSourceBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSourceBytes+1))
	if err != nil {
		return "", "", fmt.Errorf("File %q: %v", name, err)
	}
	if len(data) > maxSourceBytes {
		return "", "", fmt.Errorf("File %q is larger than %d bytes", name, maxSourceBytes)
	}
	return string(data), filepath.ToSlash(rel), nil
}

// callerDir is the directory of the Go file calling into the DSL (a model compiled into a
// program, such as examples/swish), or "." when that is not known: a loader running model
// files in an interpreter passes WithDir instead.
func callerDir() string {
	if f, ok := userFrame(); ok && filepath.IsAbs(f.File) {
		return filepath.Dir(f.File)
	}
	return "."
}
