package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"
	"github.com/traefik/yaegi/stdlib"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/load/symbols"
)

var (
	panicPosRE  = regexp.MustCompile(`(?m)^(\d+):(\d+): panic`)
	importErrRE = regexp.MustCompile(`^import "([^"]+)" error: .*`)
	errPosRE    = regexp.MustCompile(`^(\d+):(\d+): (.*)$`)
)

// goSource runs a model file through the embedded Go interpreter and calls its entry function on
// a fresh frontend.Builder. It returns the graph and the batch it was traced at (0 if the model
// declares none).
func goSource(filename string, src []byte, opt Options) (*ir.Graph, int, error) {
	// go/parser first: its syntax errors are the ones Go programmers know, with file:line:col.
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		var list scanner.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			return nil, 0, list[0]
		}
		return nil, 0, err
	}
	if !declaresFunc(file, opt.Entry) {
		return nil, 0, fmt.Errorf("%s: no function %s: a model file declares func %s(b *frontend.Builder)", filename, opt.Entry, opt.Entry)
	}

	pkg, info, err := typecheck(fset, file)
	if err != nil {
		return nil, 0, err
	}
	if err := unsupported(fset, file, info); err != nil {
		return nil, 0, err
	}
	tr := &tracer{file: filename, maxBytes: opt.Memory, types: declaredTypes(file)}
	traced, ins := instrument(fset, file, src, pkg, info)
	var stderr bytes.Buffer
	// The model's own prints (shapes, while debugging) go to our stderr, never to stdout,
	// which may carry the IR.
	i := interp.New(interp.Options{Stderr: &stderr, Stdout: os.Stderr})
	if err := i.Use(tr.exports()); err != nil {
		return nil, 0, err
	}
	if err := i.Use(allowedStdlib()); err != nil {
		return nil, 0, err
	}
	if err := i.Use(symbols.Symbols); err != nil {
		return nil, 0, err
	}
	// One deadline and one memory limit hold for the package's initialization and the entry
	// function together.
	ctx, cancel := context.WithTimeout(context.Background(), opt.Timeout)
	defer cancel()
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	over := watchMemory(opt.Memory, stopWatch)
	type result struct {
		g     *ir.Graph
		batch int
		err   error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{nil, 0, fmt.Errorf("%s: panic: %v", filename, r)}
			}
		}()
		g, batch, err := runModel(i, filename, string(traced), file.Name.Name, opt, tr, &stderr, ins)
		done <- result{g, batch, err}
	}()
	select {
	case r := <-done:
		return r.g, r.batch, r.err
	case <-ctx.Done():
		stopInterpreter(i)
		return nil, 0, limitError(filename, opt, false)
	case <-over:
		stopInterpreter(i)
		return nil, 0, limitError(filename, opt, true)
	}
}

// runModel evaluates the instrumented model source and calls its entry function on a fresh
// frontend.Builder.
func runModel(i *interp.Interpreter, filename, traced, pkg string, opt Options, tr *tracer, stderr *bytes.Buffer, ins insertions) (*ir.Graph, int, error) {
	entry := opt.Entry
	_, err := i.Eval(traced)
	tr.names = typeNames(i, pkg, tr.types)
	if err != nil {
		return nil, 0, interpError(filename, err, stderr, ins, tr)
	}
	v, err := i.Eval(pkg + "." + entry)
	if err != nil {
		return nil, 0, interpError(filename, err, stderr, ins, tr)
	}
	model, ok := v.Interface().(func(*frontend.Builder))
	if !ok {
		return nil, 0, fmt.Errorf("%s: %s has type %s, want func(b *frontend.Builder)", filename, entry, v.Type())
	}
	opts := []frontend.Option{frontend.WithPosition(tr.pos), frontend.WithDir(filepath.Dir(filename))}
	if opt.Training {
		opts = append(opts, frontend.WithTraining())
	}
	if opt.Batch != 0 {
		opts = append(opts, frontend.WithBatch(opt.Batch))
	}
	if opt.MaxBatch != 0 {
		opts = append(opts, frontend.WithMaxBatch(opt.MaxBatch))
	}
	batch := 0
	g, err := frontend.Build(pkg, func(b *frontend.Builder) {
		defer func() {
			if r := recover(); r != nil {
				panic(tr.recovered(r))
			}
		}()
		model(b)
		batch = b.TracedBatch()
	}, opts...)
	var fe *frontend.Error
	if errors.As(err, &fe) && fe.Pos == "" {
		fe.Pos = filename // a mistake of the whole model, such as declaring no outputs
	}
	return g, batch, err
}

func declaresFunc(f *ast.File, name string) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name {
			return true
		}
	}
	return false
}

// allowedStdlib exports the standard packages of modelImports to the interpreter.
func allowedStdlib() interp.Exports {
	ex := interp.Exports{}
	for _, path := range modelImports {
		key := path + "/" + path[strings.LastIndexByte(path, '/')+1:]
		if syms, ok := stdlib.Symbols[key]; ok {
			ex[key] = syms
		}
	}
	return ex
}

// interpError rewrites an interpreter error as file:line:col: message.
func interpError(filename string, err error, stderr *bytes.Buffer, ins insertions, tr *tracer) error {
	var p interp.Panic
	if errors.As(err, &p) {
		// A panic while initialising the model file (package-level vars, init functions).
		msg := tr.named(panicMessage(p.Value))
		if m := panicPosRE.FindStringSubmatch(stderr.String()); m != nil {
			line, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			return fmt.Errorf("%s:%d:%d: panic: %s", filename, line, ins.origCol(line, col), msg)
		}
		return fmt.Errorf("%s: panic: %s", filename, msg)
	}
	msg := err.Error()
	pos := ""
	// Interpreter errors look like "4:17: cannot convert 3 to string".
	if m := errPosRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		pos, msg = fmt.Sprintf("%d:%d", line, ins.origCol(line, col)), m[3]
	}
	if m := importErrRE.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("cannot import %q: %v", m[1], errNotAllowed)
	}
	if pos == "" {
		return fmt.Errorf("%s: %s", filename, msg)
	}
	return fmt.Errorf("%s:%s: %s", filename, pos, msg)
}
