// Package load turns a model file into a verified graph: a .gir text file (parsed by package ir) or
// a Go file written with the DSL (package frontend), run by an embedded Go interpreter so that
// gcomp needs neither the Go toolchain nor the network at run time.
package load

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// DefaultEntry is the function a model.go file must declare: func Model(b *frontend.Builder).
const DefaultEntry = "Model"

// Options tunes loading.
type Options struct {
	// Entry names the model function in a .go file; DefaultEntry if empty.
	Entry string
	// Training builds a .go model in training mode (frontend.WithTraining), as gcomp train
	// does: dropout drops, BatchNorm uses the batch's statistics. Eval mode otherwise.
	Training bool
}

// File loads the model at path. Errors carry file:line (and :col for Go syntax errors).
func File(path string, opt Options) (*ir.Graph, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: no such file", path)
		}
		return nil, err
	}
	return Source(path, src, opt)
}

// Source loads a model from its text; filename decides the format and is used in messages.
func Source(filename string, src []byte, opt Options) (*ir.Graph, error) {
	if opt.Entry == "" {
		opt.Entry = DefaultEntry
	}
	switch strings.ToLower(filepath.Ext(filename)) {
	case ".gir":
		g, err := ir.Parse(filename, src)
		if err != nil {
			return nil, err
		}
		if err := ops.Verify(g); err != nil {
			return nil, err
		}
		return g, nil
	case ".go":
		return goSource(filename, src, opt)
	}
	return nil, fmt.Errorf("%s: unknown model format %q (want .go or .gir)", filename, filepath.Ext(filename))
}
