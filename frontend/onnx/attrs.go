package onnx

import (
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
)

// attrSchema is one version of an op's schema: the opset it is defined since and its attributes
// ("name:TYPE ..."), generated from ONNX's own schemas into attrschema.go.
type attrSchema struct {
	since int
	attrs string
}

// checkAttrs checks a node's attributes as onnx.checker does, before any converter reads them: each
// has a name and, from IR version 2, a type; no name is given twice; and each is an attribute that
// the op's schema at the model's opset declares, of the type it declares (a Softmax axis given as
// a FLOAT is refused rather than read as 0). An op without a schema at the model's opset is left to
// its converter.
func checkAttrs(op string, opset int, irVersion int64, attrs []*onnxpb.AttributeProto) error {
	var declared string
	found := false
	for _, s := range attrSchemas[op] {
		if s.since <= opset {
			declared, found = s.attrs, true
		}
	}
	seen := map[string]bool{}
	for _, a := range attrs {
		name := a.GetName()
		if name == "" {
			return fmt.Errorf("an attribute has no name")
		}
		if seen[name] {
			return fmt.Errorf("attribute %q is given twice", name)
		}
		seen[name] = true
		if a.GetType() == onnxpb.AttributeProto_UNDEFINED && irVersion >= 2 {
			return fmt.Errorf("attribute %q has no type (UNDEFINED)", name)
		}
		if !found {
			continue
		}
		want, ok := declaredType(declared, name)
		if !ok {
			return fmt.Errorf("attribute %q is not an attribute of %s at opset %d (its attributes: %s)", name, op, opset, attrNames(declared))
		}
		if a.GetType() != onnxpb.AttributeProto_UNDEFINED && a.GetType().String() != want {
			return fmt.Errorf("attribute %q is %s, but %s declares it %s", name, a.GetType(), op, want)
		}
	}
	return nil
}

// declaredType finds name in a schema's "name:TYPE ..." list.
func declaredType(declared, name string) (string, bool) {
	for _, f := range strings.Fields(declared) {
		if n, t, _ := strings.Cut(f, ":"); n == name {
			return t, true
		}
	}
	return "", false
}

func attrNames(declared string) string {
	var names []string
	for _, f := range strings.Fields(declared) {
		n, _, _ := strings.Cut(f, ":")
		names = append(names, n)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
