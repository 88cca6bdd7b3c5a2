// Package load turns a model file into a verified graph: a .gir text file (parsed by package ir),
// a Go file written with the DSL (package frontend), run by an embedded Go interpreter so that
// gcomp needs neither the Go toolchain nor the network at run time, or an ONNX model (package
// frontend/onnx), whose weights ModelFile returns with its graph.
package load

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gcomp/gcomp/frontend/onnx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensorio"
)

// DefaultEntry is the function a model.go file must declare: func Model(b *frontend.Builder).
const DefaultEntry = "Model"

// Options tunes loading.
type Options struct {
	// Entry names the model function in a .go file; DefaultEntry if empty.
	Entry string
	// Timeout bounds the time a .go model takes to build its graph; DefaultTimeout if zero.
	Timeout time.Duration
	// Memory bounds the heap a .go model's code may grow (one make, or the heap over time);
	// DefaultMemory if zero.
	Memory int64
	// ONNX fixes an .onnx model's input shapes and compile-time inputs.
	ONNX onnx.Options
	// Training builds a .go model in training mode (frontend.WithTraining), as gcomp train
	// does: dropout drops, BatchNorm uses the batch's statistics. Eval mode otherwise.
	Training bool
	// Batch traces a .go model at this batch instead of its file's own, the number it gives
	// b.Batch, and fills an .onnx model's symbolic first input dims; 0 keeps the file's own. The
	// model is then traced twice, at Batch and Batch+1, and a line or node that fixes the batch
	// is an error (batch.go). A .gir model refuses it.
	Batch int
	// MaxBatch traces a .go model over a batch known only at run time, in [1, MaxBatch]: b.Batch
	// gives the handle of the dim "batch" (frontend.WithMaxBatch), and one build runs at every
	// batch in range. It excludes Batch; a .gir model declares its dims itself and an .onnx
	// model's come from --max-shape, so both refuse it.
	MaxBatch int
}

// File loads the model at path. Errors carry file:line (and :col for Go syntax errors).
func File(path string, opt Options) (*ir.Graph, error) {
	m, err := ModelFile(path, opt)
	if err != nil {
		return nil, err
	}
	return m.Graph, nil
}

// ModelFile is File with the weights the file carries (an ONNX model's initializers).
func ModelFile(path string, opt Options) (*Model, error) {
	src, err := readModel(path)
	if err != nil {
		return nil, err
	}
	return ModelSource(path, src, opt)
}

// readModel reads a model file, refusing one larger than its format's bound.
func readModel(path string) ([]byte, error) {
	if strings.EqualFold(filepath.Ext(path), ".onnx") {
		return onnx.ReadModelFile(path)
	}
	return tensorio.ReadFile(path, MaxSourceBytes)
}

// MaxSourceBytes bounds a model file (a .go or .gir source; a chain of a million ops in .gir is
// about 50 MB).
const MaxSourceBytes = 64 << 20

// MaxONNXBytes bounds an .onnx file: protobuf's 2 GB message limit (larger models keep their
// weights in external data files, which are read separately).
const MaxONNXBytes = onnx.MaxFileBytes

// Source loads a model from its text; filename decides the format and is used in messages.
func Source(filename string, src []byte, opt Options) (*ir.Graph, error) {
	m, err := ModelSource(filename, src, opt)
	if err != nil {
		return nil, err
	}
	return m.Graph, nil
}

// ModelSource is Source with the weights the file carries. An ONNX model's weights refer to
// src's bytes (they are not copied), so src must not change afterwards.
func ModelSource(filename string, src []byte, opt Options) (*Model, error) {
	m, _, err := modelSource(filename, src, opt)
	return m, err
}

// ModelFileBatch is ModelFile with the batch the graph was traced at: opt.Batch if set, else the
// .go model's own (the number it gives b.Batch); 0 when the model declares none (a .gir or .onnx
// model, or a .go model without b.Batch, whose batch is fixed).
func ModelFileBatch(path string, opt Options) (*Model, int, error) {
	src, err := readModel(path)
	if err != nil {
		return nil, 0, err
	}
	return modelSource(path, src, opt)
}

func modelSource(filename string, src []byte, opt Options) (*Model, int, error) {
	if opt.Entry == "" {
		opt.Entry = DefaultEntry
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.Memory <= 0 {
		opt.Memory = DefaultMemory
	}
	var g *ir.Graph
	var err error
	batch := 0
	ext := strings.ToLower(filepath.Ext(filename))
	if opt.Batch != 0 && ext != ".go" && ext != ".onnx" {
		return nil, 0, batchUnsupported(filename, ext)
	}
	if opt.MaxBatch != 0 && ext != ".go" {
		return nil, 0, fmt.Errorf("%s: a max batch bounds the batch of a .go model; %s", filename, maxBatchElsewhere(ext))
	}
	switch ext {
	case ".gir":
		if g, err = ir.Parse(filename, src); err == nil {
			err = ops.Verify(g)
		}
	case ".go":
		g, batch, err = goBatched(filename, src, opt)
	case ".onnx":
		if opt.Batch != 0 {
			return onnxBatched(filename, src, opt)
		}
		m, err := onnxSource(filename, src, opt)
		return m, 0, err
	default:
		err = fmt.Errorf("%s: unknown model format %q (want .go, .gir or .onnx)", filename, filepath.Ext(filename))
	}
	if err != nil {
		return nil, 0, err
	}
	return &Model{Graph: g}, batch, nil
}
