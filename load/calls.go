package load

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
)

// callLines finds the calls that need their own line (see trace.go) and how to route a value of
// each through tracer.Line, which returns `any`: the type assertion back must name the value's
// type in the model file's own words, so values whose type the file cannot spell are left alone
// and their call keeps the line of the statement.
type callLines struct {
	fset    *token.FileSet
	info    *types.Info
	pkg     *types.Package
	imports map[string]string // import path → the name the file gives it
}

func newCallLines(fset *token.FileSet, f *ast.File, pkg *types.Package, info *types.Info) *callLines {
	c := &callLines{fset: fset, info: info, pkg: pkg, imports: map[string]string{}}
	for _, spec := range f.Imports {
		if pn, ok := info.Defs[spec.Name].(*types.PkgName); ok {
			c.imports[pn.Imported().Path()] = pn.Name()
		} else if pn, ok := info.Implicits[spec].(*types.PkgName); ok {
			c.imports[pn.Imported().Path()] = pn.Name()
		}
	}
	return c
}

// wrap returns the text around the expression to route through tracer.Line at line, if any.
func (c *callLines) wrap(call *ast.CallExpr, line int) (e ast.Expr, prefix, suffix string, ok bool) {
	tv, known := c.info.Types[call.Fun]
	if !known || tv.IsType() || tv.IsBuiltin() || c.interpreted(call) {
		return nil, "", "", false
	}
	// The last argument is evaluated just before the call; when it cannot be routed, the last
	// one that can, then the receiver (evaluated before the arguments), and the function value
	// of a call without arguments: calling a function value obtained through `any` fails in the
	// interpreter when an argument is converted to an interface.
	var cands []ast.Expr
	for i := len(call.Args) - 1; i >= 0; i-- {
		cands = append(cands, call.Args[i])
	}
	sel, isSel := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if s := c.info.Selections[sel]; isSel && s != nil && c.receiverCopyable(s) {
		cands = append(cands, sel.X)
	} else if len(call.Args) == 0 && (!isSel || s == nil) {
		cands = append(cands, call.Fun)
	}
	for _, e := range cands {
		if isEmptyStruct(c.info.TypeOf(e)) {
			// A value of a compiled struct type without fields (nn.ReLU{}) that passes through
			// `any` comes back broken from the interpreter's type assertion ("reflect: Field index
			// out of bounds"); such a value holds no call to position anyway.
			continue
		}
		if t, ok := c.typeString(c.info.TypeOf(e), e.Pos()); ok {
			l := tracePkg + ".Line(" + strconv.Itoa(line) + ", (" + t + ")("
			return e, l, ")).(" + t + ")", true
		}
	}
	return nil, "", "", false
}

// isEmptyStruct reports whether t is a struct type without fields.
func isEmptyStruct(t types.Type) bool {
	s, ok := t.Underlying().(*types.Struct)
	return ok && s.NumFields() == 0
}

// interpreted reports whether call calls a function of the model file, which sets its own line
// on entry.
func (c *callLines) interpreted(call *ast.CallExpr) bool {
	var id *ast.Ident
	switch fn := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = fn
	case *ast.SelectorExpr:
		id = fn.Sel
	}
	f, ok := c.info.Uses[id].(*types.Func)
	if !ok || f.Pkg() != c.pkg {
		return false
	}
	recv := f.Type().(*types.Signature).Recv()
	return recv == nil || !types.IsInterface(recv.Type()) // an interface's method may be compiled code
}

// receiverCopyable reports whether a method or field can be selected from a copy of the
// receiver, which the wrapped receiver is: not when the method needs the address of a variable.
func (c *callLines) receiverCopyable(s *types.Selection) bool {
	if s.Kind() != types.MethodVal {
		return s.Kind() == types.FieldVal
	}
	recv := s.Recv()
	if _, isPtr := recv.Underlying().(*types.Pointer); isPtr || types.IsInterface(recv) {
		return true
	}
	return types.NewMethodSet(recv).Lookup(s.Obj().Pkg(), s.Obj().Name()) != nil
}

// typeString writes t as the model file names it at pos, or reports that it cannot: an
// interface (a type assertion to it fails on nil), an untyped or multiple value, a type of the
// model file, an unexported type of another package, a package the file does not import or
// whose name is shadowed at pos.
func (c *callLines) typeString(t types.Type, pos token.Pos) (string, bool) {
	if t == nil || types.IsInterface(t) || !c.spellable(t, pos) {
		return "", false
	}
	return types.TypeString(t, func(p *types.Package) string {
		if p == c.pkg {
			return ""
		}
		return c.imports[p.Path()]
	}), true
}

func (c *callLines) spellable(t types.Type, pos token.Pos) bool {
	switch t := t.(type) {
	case *types.Basic:
		return t.Info()&types.IsUntyped == 0
	case *types.Pointer:
		return c.spellable(t.Elem(), pos)
	case *types.Slice:
		return c.spellable(t.Elem(), pos)
	case *types.Array:
		return c.spellable(t.Elem(), pos)
	case *types.Map:
		return c.spellable(t.Key(), pos) && c.spellable(t.Elem(), pos)
	case *types.Signature:
		if t.TypeParams() != nil {
			return false
		}
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tup.Variables() {
				if !c.spellable(v.Type(), pos) {
					return false
				}
			}
		}
		return true
	case *types.Named:
		return t.TypeArgs() == nil && c.visible(t.Obj(), pos)
	case *types.Alias:
		return t.TypeArgs() == nil && c.visible(t.Obj(), pos)
	}
	return false // struct and interface literals, channels, generics, tuples
}

// visible reports whether the file can name the package-level type obj at pos.
func (c *callLines) visible(obj *types.TypeName, pos token.Pos) bool {
	if obj.Pkg() == nil { // error
		return obj.Name() == "error"
	}
	if obj.Parent() != obj.Pkg().Scope() {
		return false // declared inside a function
	}
	scope := c.pkg.Scope().Innermost(pos)
	if scope == nil {
		return false
	}
	if obj.Pkg() == c.pkg {
		return false // the interpreter's own types do not survive the trip through `any`
	}
	name, imported := c.imports[obj.Pkg().Path()]
	if !imported || !obj.Exported() || name == "." || name == "_" {
		return false
	}
	_, found := scope.LookupParent(name, pos)
	pn, isPkg := found.(*types.PkgName)
	return isPkg && pn.Imported() == obj.Pkg()
}
