package compiler_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
)

// A graph with symbolic dims is refused with one clear error until kernels take sizes as
// parameters, rather than compiled at its bounds.
func TestSymbolicRefused(t *testing.T) {
	g, err := ir.Parse("s.gir", []byte("graph s {\n  dims { batch in [1,16] }\n  input %x : f32[batch,2]\n  %0 = neg(%x) : f32[batch,2]\n  output y = %0\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = compiler.Compile(g, compiler.Options{})
	if err == nil || !strings.Contains(err.Error(), "graph s has symbolic dims (batch): they are not compiled yet") {
		t.Errorf("Compile = %v", err)
	}
}
