package compiler_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/internal/paramcheck"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/tensor"
)

// Graphs whose outputs are unusual still compile, bind and run: an output that is an input or
// a parameter, one value under two output names, a constant output, a full reduction that
// needs scratch memory, and a kernel reading an output another kernel wrote.
func TestEdgeCases(t *testing.T) {
	tests := []struct{ name, src string }{
		{"output is an input", `graph g {
  input %x : f32[4]
  %0 = exp(%x) : f32[4]
  output x = %x
  output y = %0
}
`},
		{"output is a param", `graph g {
  input %x : f32[4]
  param %w : f32[4] {init="normal"}
  %0 = add(%x, %w) : f32[4]
  output w = %w
  output y = %0
}
`},
		{"one value two names", `graph g {
  input %x : f32[4]
  %0 = neg(%x) : f32[4]
  output a = %0
  output b = %0
}
`},
		{"constant output", `graph g {
  input %x : f32[4]
  %0 = constant() {dtype=f32, shape=[4], value=[1.5]} : f32[4]
  %1 = mul(%x, %0) : f32[4]
  output c = %0
  output y = %1
}
`},
		{"full reduction", `graph g {
  input %x : f32[300,700]
  %0 = reduce_sum(%x) {axes=[0,1]} : f32[]
  output s = %0
}
`},
		{"output read by a later kernel", `graph g {
  input %x : f32[8,16]
  param %w : f32[16,16] {init="normal"}
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[8,16]
  %1 = reduce_max(%0) {axes=[1]} : f32[8]
  output h = %0
  output m = %1
}
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse("g.gir", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rep := simCheck(t, res, g)
			if len(rep.Outputs) != len(g.Outputs) {
				t.Errorf("%d outputs compared, the graph has %d", len(rep.Outputs), len(g.Outputs))
			}
			for _, o := range rep.Outputs {
				if !o.Pass() {
					t.Errorf("%s: %d bad, first %s", o.Name, o.Bad, o.First)
				}
			}
		})
	}
}

// simCheck runs res on the simulator and g on the reference with seeded values (seed 1) and
// compares them (check.Run).
func simCheck(t *testing.T, res *compiler.Result, g *ir.Graph) *check.Report {
	t.Helper()
	inputs, params, err := tensor.SeededValues(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	paramcheck.NonZero(t, params)
	rep, err := check.Run(res.Artifact, inputs, params)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A model's source locations name the model file relative to its own directory, so the same
// model compiled from two checkouts gives the same bytes; the caller's graph is left as it was.
func TestRelativeLocations(t *testing.T) {
	var arts [][]byte
	for _, dir := range []string{"/home/a/gcomp/examples/mlp", `C:\src\gcomp\examples\mlp`, "examples/mlp"} {
		g, err := ir.Parse("model.gir", []byte(fmt.Sprintf(`graph g {
  input %%x : f32[4,8] loc(%q)
  %%0 = exp(%%x) : f32[4,8] loc(%q)
  output y = %%0
}
`, dir+"/model.go:3", dir+"/model.go:4")))
		if err != nil {
			t.Fatal(err)
		}
		res, err := compiler.Compile(g, compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		plan := res.Artifact.Plan.JSON()
		if strings.Contains(string(plan)+string(res.Artifact.PTX), "examples") {
			t.Errorf("%s: the artifact names the checkout:\n%s", dir, plan)
		}
		if !strings.Contains(string(plan), `loc(\"model.go:4\")`) {
			t.Errorf("%s: no relative location in the plan:\n%s", dir, plan)
		}
		if g.Values[1].Pos != dir+"/model.go:4" {
			t.Errorf("the caller's graph changed: %q", g.Values[1].Pos)
		}
		arts = append(arts, append(plan, res.Artifact.PTX...))
	}
	for i := 1; i < len(arts); i++ {
		if !bytes.Equal(arts[i], arts[0]) {
			t.Errorf("artifact %d differs from artifact 0", i)
		}
	}
}

// With tf32, a contraction the tensor cores cannot take says so in its plan entry and kernel
// comment; one they take has no note.
func TestTF32Notes(t *testing.T) {
	g, err := ir.Parse("model.gir", []byte(`graph g {
  input %x : f32[64,64]
  param %w : f32[32,16] {init="normal"}
  param %v : f32[16,32] {init="normal"}
  %0 = slice(%x) {start=[0,0], limit=[64,64], stride=[2,2]} : f32[32,32]
  %1 = dot_general(%0, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[32,16]
  %2 = dot_general(%1, %v) {lhs_contract=[1], rhs_contract=[0]} : f32[32,32]
  output y = %2
}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{Target: ptx.Target{SM: 80, TF32: true}})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, k := range res.Artifact.Plan.Kernels {
		notes = append(notes, k.Name+": "+strings.Join(k.Notes, "; "))
	}
	got := strings.Join(notes, "\n")
	if !regexp.MustCompile(`k0.*: tf32 fallback to FFMA: an operand has no contiguous dim`).MatchString(got) || strings.Count(got, "fallback") != 1 {
		t.Errorf("notes:\n%s", got)
	}
	if !strings.Contains(string(res.Artifact.PTX), "// tf32 fallback to FFMA: an operand has no contiguous dim") {
		t.Error("no fallback comment in the module")
	}
}
