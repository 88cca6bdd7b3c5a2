package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/tensorio"
)

func cmdQuantize(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("quantize", flag.ContinueOnError)
	int8 := fs.Bool("int8", false, "8-bit weights")
	int4 := fs.Bool("int4", false, "4-bit weights")
	group := fs.Int("group", 128, "input channels sharing a scale and zero point (-1: one per output channel)")
	sym := fs.Bool("sym", false, "symmetric: the range ±max|w|, the zero point 2^(bits-1)")
	out := fs.String("o", "", "the model folder to write (GPTQ layout)")
	force := fs.Bool("force", false, "replace the folder -o names if it exists")
	dir, err := parseModelArgs(fs, args, stdout, "MODEL_DIR --int8|--int4 [--group 128] [--sym] -o OUT_DIR [--force]")
	if err != nil {
		return err
	}
	fail := func(format string, args ...any) error { return fmt.Errorf("gcomp quantize: "+format, args...) }
	bits := 8
	switch {
	case *int8 == *int4:
		return fail("give --int8 or --int4 (one of them)")
	case *int4:
		bits = 4
	}
	if *group != -1 && *group < 1 {
		return fail("--group %d: want -1 (per output channel) or a positive number of input channels", *group)
	}
	if *out == "" {
		return fail("-o OUT_DIR is required")
	}
	var st *checkpoint.QuantizeStats
	err = writeFolderAtomic(dir, *out, *force, func(tmp string) error {
		var err error
		st, err = checkpoint.WriteQuantized(dir, tmp, bits, *group, *sym)
		return err
	})
	if err != nil {
		return err
	}
	kind := "asymmetric"
	if *sym {
		kind = "symmetric"
	}
	groups := fmt.Sprintf("groups of %d", *group)
	if *group == -1 {
		groups = "per output channel"
	}
	fmt.Fprintf(stdout, "%s: %d linear layers quantized to GPTQ int%d (%s, %s), %d tensors kept as stored; %s is %d bytes\n",
		*out, st.Layers, bits, groups, kind, st.Kept, checkpoint.WeightsFile, st.Bytes)
	return nil
}

// writeFolderAtomic writes the folder out from src by write, which fills an empty directory: a
// temporary directory beside out, renamed into place when write succeeds, so out is whole or
// absent. An existing out is refused unless force, and never when it is a file, src itself or a
// folder holding src. Missing parents are made as mkdir -p makes them, and removed on failure.
func writeFolderAtomic(src, out string, force bool, write func(dir string) error) (err error) {
	fail := func(format string, args ...any) error { return fmt.Errorf("gcomp quantize: "+format, args...) }
	st, lerr := os.Lstat(out)
	exists := lerr == nil
	switch {
	case lerr != nil && !errors.Is(lerr, fs.ErrNotExist):
		return fail("cannot write %s: %v", out, lerr)
	case exists && !st.IsDir():
		return fail("%s exists and is not a folder", out)
	case exists && !force:
		return fail("%s exists (give --force to replace it)", out)
	case exists && contains(out, src):
		return fail("%s holds the model folder %s: it cannot be replaced", out, src)
	}
	tmp, done, err := tempBeside(out)
	if err != nil {
		return err
	}
	defer func() { done(err != nil) }()
	parent := filepath.Dir(filepath.Clean(out))
	if err := write(tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fail("%v", err)
	}
	if exists {
		// Move the old folder into a tracked temporary, put the new one in its place, then drop the old.
		old, forgetOld, err := tensorio.MkdirTemp(parent, ".gcomp-old-*")
		if err != nil {
			return fail("cannot write to %s: %v", parent, err)
		}
		defer os.RemoveAll(old)
		defer forgetOld()
		if err := os.Rename(out, filepath.Join(old, "out")); err != nil {
			return fail("cannot replace %s: %v", out, err)
		}
		if err := os.Rename(tmp, out); err != nil {
			os.Rename(filepath.Join(old, "out"), out)
			return fail("cannot replace %s: %v", out, err)
		}
		return nil
	}
	if err := os.Rename(tmp, out); err != nil {
		return fail("cannot create %s: %v", out, err)
	}
	return nil
}

// contains reports whether the folder dir is path or holds it.
func contains(dir, path string) bool {
	d, err1 := filepath.Abs(dir)
	p, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return true // cannot tell: refuse
	}
	if rd, err := filepath.EvalSymlinks(d); err == nil {
		d = rd
	}
	if rp, err := filepath.EvalSymlinks(p); err == nil {
		p = rp
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
