package load

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/gcexportdata"
)

// modelImports are the packages a model file may import: the DSL and the standard packages that
// help compute shapes and constants. Files, network and processes have no place in a model.
var modelImports = []string{
	"github.com/gcomp/gcomp/ir", "github.com/gcomp/gcomp/frontend", "github.com/gcomp/gcomp/frontend/nn",
	"errors", "fmt", "math", "math/bits", "slices", "sort", "strconv", "strings",
}

// modelTypes is the type information of modelImports, written by `go generate ./load`; a test
// checks that it is current.
//
//go:generate go run ./internal/gentypes -o modeltypes.bin github.com/gcomp/gcomp/ir github.com/gcomp/gcomp/frontend github.com/gcomp/gcomp/frontend/nn errors fmt math math/bits slices sort strconv strings
//go:embed modeltypes.bin
var modelTypes []byte

// typecheck checks file with go/types, as the Go compiler would, so that type errors come back
// with the compiler's words and file:line:col even though the file then runs in an interpreter.
func typecheck(fset *token.FileSet, file *ast.File) (*types.Package, *types.Info, error) {
	imports := map[string]*types.Package{}
	_, bundle, _ := bytes.Cut(modelTypes, []byte("\n")) // after the Go version line
	pkgs, err := gcexportdata.ReadBundle(bytes.NewReader(bundle), fset, imports)
	if err != nil {
		return nil, nil, fmt.Errorf("load: reading the DSL's type information: %v", err)
	}
	allowed := map[string]*types.Package{}
	for _, p := range pkgs {
		allowed[p.Path()] = p
	}
	var first error
	conf := types.Config{
		GoVersion: "go1.24",
		Importer: importerFunc(func(path string) (*types.Package, error) {
			if p := allowed[path]; p != nil {
				return p, nil
			}
			return nil, errNotAllowed
		}),
		Error: func(err error) {
			if first == nil {
				first = err
			}
		},
	}
	info := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Implicits:  map[ast.Node]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	pkg, _ := conf.Check(file.Name.Name, fset, []*ast.File{file}, info)
	if first != nil {
		var te types.Error
		if errors.As(first, &te) {
			msg := te.Msg
			if strings.Contains(msg, errNotAllowed.Error()) {
				msg = fmt.Sprintf("cannot import %s: %s", importPath(file, fset, te.Pos), errNotAllowed.Error())
			}
			return nil, nil, fmt.Errorf("%s: %s", te.Fset.Position(te.Pos), msg)
		}
		return nil, nil, first
	}
	return pkg, info, nil
}

var errNotAllowed = errors.New("a model file may import " + strings.Join(modelImports, ", "))

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// importPath returns the path of the import spec at pos, for messages.
func importPath(f *ast.File, fset *token.FileSet, pos token.Pos) string {
	for _, s := range f.Imports {
		if s.Pos() <= pos && pos <= s.End() {
			return s.Path.Value
		}
	}
	return "a package"
}

// isIntRange reports whether a range statement ranges over an integer (Go 1.22), which the
// interpreter does not support; the loader rewrites those loops.
func isIntRange(info *types.Info, rs *ast.RangeStmt) bool {
	tv, ok := info.Types[rs.X]
	if !ok || tv.Type == nil {
		return false
	}
	b, ok := tv.Type.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsInteger != 0
}

// unsupported finds what type-checks as Go but a model file may not do, and says so at its
// position instead of failing inside the interpreter: ranging over a function (Go 1.23
// iterators), which the interpreter cannot run, and go statements: a model is built by one
// goroutine (the builder is not safe for concurrent use, and a panic in another goroutine could
// not be reported at its line).
func unsupported(fset *token.FileSet, file *ast.File, info *types.Info) error {
	var err error
	ast.Inspect(file, func(n ast.Node) bool {
		if err != nil {
			return false
		}
		if g, ok := n.(*ast.GoStmt); ok {
			err = fmt.Errorf("%s: go statements are not allowed in model files: a model's graph is built by one goroutine", fset.Position(g.Go))
			return false
		}
		rs, ok := n.(*ast.RangeStmt)
		if !ok {
			return true
		}
		if tv, ok := info.Types[rs.X]; ok && tv.Type != nil {
			if _, ok := tv.Type.Underlying().(*types.Signature); ok {
				err = fmt.Errorf("%s: range over a function (an iterator) is not supported in model files: loop over a slice or call the function with a callback", fset.Position(rs.For))
			}
		}
		return true
	})
	return err
}
