package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/tensorio"
)

// modelFlags are the flags every command that loads a model shares.
type modelFlags struct {
	entry *string
}

func addModelFlags(fs *flag.FlagSet) modelFlags {
	return modelFlags{entry: fs.String("entry", load.DefaultEntry, "name of the model function in a .go model file")}
}

func (m modelFlags) load(path string) (*ir.Graph, error) {
	return load.File(path, load.Options{Entry: *m.entry})
}

func cmdBuild(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	mf := addModelFlags(fs)
	out := fs.String("o", "", "write the output to this file instead of standard output")
	emit := fs.String("emit", "", "what to write: ir (the .gir text form) or dot (graphviz)")
	path, err := parseModelArgs(fs, args, stdout, "MODEL [--emit ir|dot] [-o FILE]")
	if err != nil {
		return err
	}
	var render func(*ir.Graph) string
	switch *emit {
	case "ir":
		render = (*ir.Graph).String
	case "dot":
		render = (*ir.Graph).DOT
	case "", "ptx", "plan":
		return fmt.Errorf("gcomp build: this version of gcomp has no PTX code generator yet; use --emit ir or --emit dot")
	default:
		return fmt.Errorf("gcomp build: unknown --emit %q (want ir or dot)", *emit)
	}
	g, err := mf.load(path)
	if err != nil {
		return err
	}
	return writeOutput(*out, stdout, render(g))
}

func cmdDump(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	mf := addModelFlags(fs)
	path, err := parseModelArgs(fs, args, stdout, "MODEL")
	if err != nil {
		return err
	}
	g, err := mf.load(path)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, g.String())
	return err
}

// writeOutput writes text to path atomically, or to stdout when path is empty.
func writeOutput(path string, stdout io.Writer, text string) error {
	if path == "" {
		_, err := io.WriteString(stdout, text)
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("gcomp: cannot write %s: directory %s does not exist", path, dir)
		}
	}
	return tensorio.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	})
}
