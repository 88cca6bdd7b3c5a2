package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// TestFP8Refused: a kernel over fp8 values is refused with the dtype and the target named, in the
// form a per-kernel producer choice falls back on.
func TestFP8Refused(t *testing.T) {
	for _, d := range []ir.DType{ir.F8E4M3, ir.F8E5M2} {
		for _, dir := range [][2]ir.DType{{ir.F32, d}, {d, ir.F16}} {
			g := ir.NewGraph("cast")
			x := g.Input("x", ir.T(dir[0], 4), nil)
			g.SetOutput("y", g.Add("cast", ir.T(dir[1], 4), ir.Attrs{"to": dir[1]}, x))
			_, _, err := IR([]plan.Kernel{{Name: "k", Graph: g}}, plan.Target{SM: 90})
			if err == nil || !Refused(err) || !strings.Contains(err.Error(), d.String()) || !strings.Contains(err.Error(), "sm_90") {
				t.Errorf("%s → %s: %v", dir[0], dir[1], err)
			}
		}
	}
}

// TestMergeKeepsNewestVersion: codegen/ptx's fp8 entries for sm_89 (PTX ISA 8.1) merged after
// libNVVM's (7.8) keep the module at 8.1, which their cvt needs.
func TestMergeKeepsNewestVersion(t *testing.T) {
	mod := func(version, entry string) string {
		return ".version " + version + "\n.target sm_89\n.address_size 64\n\n.visible .entry " + entry + "()\n{\n\tret;\n}\n"
	}
	for _, c := range []struct{ a, b, want string }{{"7.8", "8.1", "8.1"}, {"8.1", "7.8", "8.1"}, {"7.8", "7.8", "7.8"}, {"7.8", "10.0", "10.0"}} {
		got, err := MergePTX([]string{mod(c.a, "a"), mod(c.b, "b")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got, ".version "+c.want+"\n") || strings.Count(got, ".version") != 1 {
			t.Errorf("%s + %s:\n%s", c.a, c.b, got)
		}
	}
}
