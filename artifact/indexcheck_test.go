package artifact_test

import (
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
)

// A gather's launch has an error word in the error area and a description of its gather; a plan
// read from a file whose error words or checks do not fit is refused before anything is
// allocated.
func TestParsePlanIndexChecks(t *testing.T) {
	g, err := ir.Parse("embed.gir", []byte(`graph embed {
  input %ids : i64[4]
  param %table : f32[10,8]
  %0 = gather(%table, %ids) : f32[4,8]
  output y = %0
}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Artifact.Plan
	if p.ErrorBytes != artifact.ErrorWordBytes || len(p.Kernels) != 1 {
		t.Fatalf("error area %d bytes for %d kernels", p.ErrorBytes, len(p.Kernels))
	}
	want := artifact.IndexCheck{Site: 1, Op: "gather(%table, %ids) : f32[4,8]", Indices: "ids", Table: "f32[10,8]", Rows: 10}
	if c := p.Kernels[0].IndexChecks; len(c) != 1 || c[0] != want {
		t.Errorf("index checks %+v, want %+v", c, want)
	}
	good := string(p.JSON())
	checkParseErrors(t, good, []parseCase{
		{"area too large", `"error_bytes": 32`, `"error_bytes": 3200000000`, "error_bytes 3200000000 is not 32 bytes for some of the 1 kernels"},
		{"area not words", `"error_bytes": 32`, `"error_bytes": 31`, "error_bytes 31"},
		{"word outside", `"kind": "error"`, `"kind": "error", "offset": 32`, "error word at 32 is not a word of the 32-byte error area"},
		{"no checks", `"site": 1`, `"site": 2`, "index check 0 has site 2"},
		{"no word", `"kind": "error"`, `"kind": "output", "name": "y"`, "0 error words for 1 index checks"},
	})
}
