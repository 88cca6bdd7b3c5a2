package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load"
	"github.com/gcomp/gcomp/passes"
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

// statsFlag is --stats (a table) or --stats=json.
type statsFlag string

func (f *statsFlag) String() string   { return string(*f) }
func (f *statsFlag) IsBoolFlag() bool { return true }
func (f *statsFlag) Set(v string) error {
	switch v {
	case "true", "table":
		*f = "table"
	case "json":
		*f = "json"
	case "false":
		*f = ""
	default:
		return fmt.Errorf("want --stats or --stats=json")
	}
	return nil
}

func cmdBuild(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	mf := addModelFlags(fs)
	out := fs.String("o", "", "write the output to this file instead of standard output")
	emit := fs.String("emit", "", "what to write: ir (the source graph, .gir), dot (graphviz), kernels (the fused kernel graph) or plan (the memory plan, JSON)")
	var stats statsFlag
	fs.Var(&stats, "stats", "print the cost report: --stats for a table, --stats=json for one JSON object")
	dumpAfter := fs.String("dump-after", "", "print the IR after this pass (or all) to stderr")
	var disable multiFlag
	fs.Var(&disable, "disable-pass", "skip this pass (repeatable)")
	timings := fs.Bool("timings", false, "print the time each pass took to stderr")
	verifyEach := fs.Bool("verify-each", false, "check the IR, kernel graph and plan after every pass")
	tf32 := fs.Bool("tf32", false, "cost model: f32 contractions on TF32 tensor cores")
	path, err := parseModelArgs(fs, args, stdout, "MODEL [--emit ir|dot|kernels|plan] [-o FILE] [--stats[=json]] [--dump-after PASS|all] [--disable-pass NAME]... [--timings] [--verify-each]")
	if err != nil {
		return err
	}
	switch *emit {
	case "", "ir", "dot", "kernels", "plan":
	case "ptx":
		return fmt.Errorf("gcomp build: this version of gcomp has no PTX code generator yet; use --emit ir, dot, kernels or plan")
	default:
		return fmt.Errorf("gcomp build: unknown --emit %q (want ir, dot, kernels or plan)", *emit)
	}
	if *emit == "" && stats == "" {
		return fmt.Errorf("gcomp build: this version of gcomp has no PTX code generator yet; use --emit ir, dot, kernels or plan, or --stats")
	}
	g, err := mf.load(path)
	if err != nil {
		return err
	}
	var text string
	switch *emit {
	case "ir":
		text = g.String()
	case "dot":
		text = g.DOT()
	}
	if *emit == "kernels" || *emit == "plan" || stats != "" {
		opt := passes.Options{DumpAfter: *dumpAfter, DumpTo: stderr, DisablePasses: disable, VerifyEach: *verifyEach, TF32: *tf32}
		if *timings {
			opt.Timings = stderr
		}
		res, err := passes.Run(g, opt)
		if err != nil {
			return fmt.Errorf("gcomp build: %s: %v", path, err)
		}
		switch *emit {
		case "kernels":
			text = res.Kernels.String()
		case "plan":
			text = string(res.Plan.JSON())
		}
		switch stats {
		case "json":
			stdout.Write(res.Stats.JSON())
		case "table":
			res.Stats.WriteTable(stdout)
		}
	}
	if *emit == "" {
		return nil
	}
	if *out == "" && stats != "" {
		return fmt.Errorf("gcomp build: with --stats, give -o FILE for the --emit output")
	}
	return writeOutput(*out, stdout, text)
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
