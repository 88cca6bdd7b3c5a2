package load

import (
	"go/ast"
	"go/types"
)

// The interpreter passes each argument of a compiled variadic function as it is, without the
// wrapper that makes a value of the model file's own type satisfy a compiled interface: for
// nn.NewSequential(NewBasicBlock(...)) reflect then panics ("cannot use *struct {...} as type
// nn.Module in Call"). A slice literal of the interface type does get its elements wrapped, so
// such a call is rewritten as nn.NewSequential([]nn.Module{NewBasicBlock(...)}...), which is the
// same call in Go. The text is inserted on the lines it belongs to, so no line moves.

// variadicSlice returns the text to insert before the first variadic argument of call and after
// its last one, if call passes separate arguments to a compiled variadic function whose
// parameter is a non-empty interface the file can name.
func (c *callLines) variadicSlice(call *ast.CallExpr) (first, last ast.Expr, open, close string, ok bool) {
	if call.Ellipsis.IsValid() || c.interpreted(call) {
		return nil, nil, "", "", false
	}
	tv, known := c.info.Types[call.Fun]
	if !known || tv.IsType() || tv.IsBuiltin() {
		return nil, nil, "", "", false
	}
	sig, isSig := tv.Type.Underlying().(*types.Signature)
	if !isSig || !sig.Variadic() || len(call.Args) < sig.Params().Len() {
		return nil, nil, "", "", false
	}
	if _, multi := c.info.TypeOf(call.Args[0]).(*types.Tuple); multi {
		return nil, nil, "", "", false // f(g()) with g's results as the arguments: no slice can hold them
	}
	elem := sig.Params().At(sig.Params().Len() - 1).Type().(*types.Slice).Elem()
	iface, isIface := elem.Underlying().(*types.Interface)
	if !isIface || iface.NumMethods() == 0 || !c.spellable(elem, call.Lparen) {
		return nil, nil, "", "", false
	}
	t := types.TypeString(elem, func(p *types.Package) string { return c.imports[p.Path()] })
	return call.Args[sig.Params().Len()-1], call.Args[len(call.Args)-1], "[]" + t + "{", "}...", true
}

// ifaceConversion returns the replacement text for the opening "I(" and the closing ")" of a
// conversion to a compiled non-empty interface I, which the interpreter makes without the
// wrapper ("reflect.Set: value of type *struct {...} is not assignable to type nn.Module"): the
// conversion is written []I{x}[0], the same value in Go, whose element the interpreter wraps.
func (c *callLines) ifaceConversion(call *ast.CallExpr) (open, close string, ok bool) {
	tv, known := c.info.Types[call.Fun]
	if !known || !tv.IsType() || len(call.Args) != 1 || call.Ellipsis.IsValid() {
		return "", "", false
	}
	iface, isIface := tv.Type.Underlying().(*types.Interface)
	named, isNamed := tv.Type.(*types.Named)
	if !isIface || !isNamed || iface.NumMethods() == 0 || named.Obj().Pkg() == c.pkg || !c.spellable(tv.Type, call.Lparen) {
		return "", "", false
	}
	t := types.TypeString(tv.Type, func(p *types.Package) string { return c.imports[p.Path()] })
	return "[]" + t + "{", "}[0]", true
}
