package load

import (
	"cmp"
	"go/ast"
	"go/token"
	"reflect"
	"slices"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// The interpreter builds the model file's struct types with reflect.StructOf, so reflect's
// panics name a value of type *BasicBlock "*struct { Conv1 *nn.Conv2d; ... }". The loader asks
// the interpreter for each struct type the file declares and writes its declared name,
// "*resnet.BasicBlock", in place of that text in the messages it returns.

// declaredTypes lists the names of the non-generic types declared at the file's top level.
func declaredTypes(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			if ts := s.(*ast.TypeSpec); ts.TypeParams == nil && ts.Name.Name != "_" {
				names = append(names, ts.Name.Name)
			}
		}
	}
	return names
}

// typeNames returns a replacer of the interpreter's text for each struct type of the file pkg
// (declared as names) by its declared name, longest text first so that a struct holding another
// is named as a whole. Of two types with the same fields, the first declared gives the name.
func typeNames(i *interp.Interpreter, pkg string, names []string) *strings.Replacer {
	type pair struct{ anon, name string }
	var pairs []pair
	seen := map[string]bool{}
	for _, n := range names {
		v, err := i.Eval("(*" + pkg + "." + n + ")(nil)")
		if err != nil || !v.IsValid() || v.Kind() != reflect.Pointer {
			continue
		}
		t := v.Type().Elem()
		if t.Kind() != reflect.Struct || t.Name() != "" || seen[t.String()] {
			continue
		}
		seen[t.String()] = true
		pairs = append(pairs, pair{t.String(), pkg + "." + n})
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return cmp.Compare(len(b.anon), len(a.anon)) })
	var oldnew []string
	for _, p := range pairs {
		oldnew = append(oldnew, p.anon, p.name)
	}
	return strings.NewReplacer(oldnew...)
}

// named writes the file's own type names into msg.
func (t *tracer) named(msg string) string {
	if t.names == nil {
		return msg
	}
	return t.names.Replace(msg)
}
