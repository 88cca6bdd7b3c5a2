package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

func cmdRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	mf := addModelFlags(fs)
	device := fs.String("device", "ref", "where to run: ref (the reference interpreter)")
	weights := fs.String("weights", "", "safetensors file with the parameters (missing ones use the model's initializers)")
	strict := fs.Bool("strict", false, "require --weights to hold every parameter")
	var inputs multiFlag
	fs.Var(&inputs, "input", "NAME=FILE.npy: an input's value (repeatable); inputs not given get seeded random data")
	seed := fs.Uint64("seed", 0, "seed for random inputs and initial weights")
	outDir := fs.String("output-dir", "", "directory to write each output to as NAME.npy")
	saveInputs := fs.Bool("save-inputs", false, "also write the inputs used (given or random) to DIR/inputs/NAME.npy")
	path, err := parseModelArgs(fs, args, stdout, "MODEL --device ref [--weights W.safetensors] [--input NAME=FILE.npy]... --output-dir DIR")
	if err != nil {
		return err
	}
	if *outDir == "" {
		return fmt.Errorf("gcomp run: --output-dir is required")
	}
	switch *device {
	case "ref":
	case "sim", "auto", "cuda":
		return fmt.Errorf("gcomp run: device %q needs compiled kernels, which this version of gcomp cannot generate yet; use --device ref", *device)
	default:
		return fmt.Errorf("gcomp run: unknown device %q (want ref)", *device)
	}
	g, err := mf.load(path)
	if err != nil {
		return err
	}
	params, err := bindParams(g, *weights, *strict, *seed, stderr)
	if err != nil {
		return err
	}
	in, err := bindInputs(g, inputs, *seed, stderr)
	if err != nil {
		return err
	}
	outs, err := ref.Run(g, in, params)
	if err != nil {
		return fmt.Errorf("gcomp run: %s: %v", path, err)
	}
	files := map[string]*tensorio.Array{}
	for name, t := range outs {
		files[name+".npy"] = t.Array()
	}
	if *saveInputs {
		for name, t := range in {
			files[filepath.Join("inputs", name+".npy")] = t.Array()
		}
	}
	return writeNPYFiles(*outDir, files)
}

func bindInputs(g *ir.Graph, specs []string, seed uint64, stderr io.Writer) (map[string]*tensor.Tensor, error) {
	in := map[string]*tensor.Tensor{}
	for _, spec := range specs {
		name, file, ok := strings.Cut(spec, "=")
		if !ok || name == "" || file == "" {
			return nil, fmt.Errorf("gcomp run: --input %q: want NAME=FILE.npy", spec)
		}
		v := g.Lookup(name)
		if v == nil || v.Op != ir.OpInput {
			return nil, fmt.Errorf("gcomp run: --input %s: the model has no input %q (inputs: %s)", spec, name, valueNames(g.Inputs()))
		}
		if in[name] != nil {
			return nil, fmt.Errorf("gcomp run: input %s given twice", name)
		}
		a, err := tensorio.ReadNPYFile(file)
		if err != nil {
			return nil, err
		}
		t, err := tensor.FromArray(a)
		if err != nil {
			return nil, fmt.Errorf("gcomp run: %s: %v", file, err)
		}
		if !t.Type.Equal(v.Type) {
			return nil, fmt.Errorf("gcomp run: input %s: %s holds %s, the model wants %s", name, file, t.Type, v.Type)
		}
		in[name] = t
	}
	for _, v := range g.Inputs() {
		if in[v.Name] == nil {
			in[v.Name] = tensor.RandomInput(v, seed)
			fmt.Fprintf(stderr, "gcomp: input %s not given: using seeded random %s (seed %d)\n", v.Name, v.Type, seed)
		}
	}
	return in, nil
}

func bindParams(g *ir.Graph, weights string, strict bool, seed uint64, stderr io.Writer) (map[string]*tensor.Tensor, error) {
	var file map[string]*tensorio.Array
	if weights != "" {
		var err error
		if file, _, err = tensorio.ReadSafetensorsFile(weights); err != nil {
			return nil, err
		}
	}
	params := map[string]*tensor.Tensor{}
	var initialized []string
	for _, p := range g.Params() {
		a, ok := file[p.Name]
		if !ok {
			if strict {
				return nil, fmt.Errorf("gcomp: %s has no tensor %s (%s) and --strict is set", weights, p.Name, p.Type)
			}
			t, err := tensor.Initialize(p, seed)
			if err != nil {
				return nil, err
			}
			params[p.Name] = t
			initialized = append(initialized, p.Name)
			continue
		}
		t, err := tensor.FromArray(a)
		if err != nil {
			return nil, fmt.Errorf("gcomp: %s: tensor %s: %v", weights, p.Name, err)
		}
		if !t.Type.Equal(p.Type) {
			return nil, fmt.Errorf("gcomp: %s: tensor %s is %s, the model wants %s", weights, p.Name, t.Type, p.Type)
		}
		params[p.Name] = t
	}
	var unknown []string
	for name := range file {
		if v := g.Lookup(name); v == nil || v.Op != ir.OpParam {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("gcomp: %s has tensors the model does not declare: %s (model parameters: %s)", weights, strings.Join(unknown, ", "), valueNames(g.Params()))
	}
	if weights != "" && len(initialized) > 0 {
		fmt.Fprintf(stderr, "gcomp: %d parameters not in %s use their initializers (seed %d): %s\n", len(initialized), weights, seed, strings.Join(initialized, ", "))
	}
	return params, nil
}

func valueNames(vs []*ir.Value) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// writeNPYFiles writes every file into dir, or none: all are written to temporary names first and
// renamed into place only when every write succeeded.
func writeNPYFiles(dir string, files map[string]*tensorio.Array) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gcomp: cannot create output directory: %v", err)
	}
	tmp, err := os.MkdirTemp(dir, ".gcomp-out-*")
	if err != nil {
		return fmt.Errorf("gcomp: cannot write to %s: %v", dir, err)
	}
	defer os.RemoveAll(tmp)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("gcomp: %v", err)
		}
		if err := tensorio.WriteNPYFile(path, files[name]); err != nil {
			return err
		}
	}
	for _, name := range names {
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("gcomp: %v", err)
		}
		if err := os.Rename(filepath.Join(tmp, name), dst); err != nil {
			return fmt.Errorf("gcomp: %v", err)
		}
	}
	return nil
}

func cmdInitWeights(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init-weights", flag.ContinueOnError)
	mf := addModelFlags(fs)
	out := fs.String("o", "", "the safetensors file to write")
	seed := fs.Uint64("seed", 0, "seed for the initializers")
	path, err := parseModelArgs(fs, args, stdout, "MODEL -o W.safetensors [--seed N]")
	if err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("gcomp init-weights: -o FILE is required")
	}
	g, err := mf.load(path)
	if err != nil {
		return err
	}
	params, err := bindParams(g, "", false, *seed, stderr)
	if err != nil {
		return err
	}
	arrays := map[string]*tensorio.Array{}
	for name, t := range params {
		arrays[name] = t.Array()
	}
	return tensorio.WriteSafetensorsFile(*out, arrays, map[string]string{"format": "pt"})
}
