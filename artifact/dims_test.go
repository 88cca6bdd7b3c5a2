package artifact_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
)

const symbolicGraph = `graph s {
  dims { batch in [1,40] }
  input %x : f32[batch,3]
  %0 = exp(%x) : f32[batch,3]
  output y = %0
}
`

// A plan with dims (version 4) records them, each input's and output's symbolic sizes, the size
// argument and the grid's rule; every inconsistency in them is one error.
func TestParsePlanDims(t *testing.T) {
	a := compiledText(t, symbolicGraph)
	if a.Plan.Version != artifact.Version || len(a.Plan.Dims) != 1 || a.Plan.Kernels[0].Work == nil {
		t.Fatalf("plan version %d, dims %v, work %v", a.Plan.Version, a.Plan.Dims, a.Plan.Kernels[0].Work)
	}
	if got := a.Plan.Kernels[0].Work.Grid(120, a.Plan.Kernels[0].Grid, [3]int{256, 1, 1}); got != [3]int{1, 1, 1} {
		t.Errorf("grid at 120 elements = %v", got)
	}
	good := string(a.Plan.JSON())
	if _, err := artifact.ParsePlan([]byte(good)); err != nil {
		t.Fatalf("the symbolic plan: %v", err)
	}
	// A static plan stays version 3, byte for byte what it was.
	if v := compiled(t).Plan.Version; v != artifact.StaticVersion {
		t.Errorf("a static plan is version %d", v)
	}
	tests := []parseCase{
		{"version 3 with dims", `"version": 4`, `"version": 3`, "dims need plan version 4, this plan is version 3"},
		{"empty range", `"lo": 1`, `"lo": 41`, `dim "batch" in [41,40]`},
		{"bad dim name", `"name": "batch",`, `"name": "2b",`, `dim "2b" in [1,40]`},
		{"undeclared name", "\"sym\": [\n        \"batch\"", "\"sym\": [\n        \"seq\"", "size \"seq\" names seq, which is not a dim of the plan"},
		{"sym past the bound", "\"sym\": [\n        \"batch\"", "\"sym\": [\n        \"2*batch\"", "x dim 0: 2*batch is not within [0, 40] over the dims"},
		{"sym below the bound", "\"sym\": [\n        \"batch\"", "\"sym\": [\n        \"batch-1\"", "x dim 0: batch-1 is not within [0, 40]"},
		{"rank", "\"sym\": [\n        \"batch\",", "\"sym\": [", "x: 1 symbolic sizes for type f32[40,3]"},
		{"bad expression", `"expr": "3*batch"`, `"expr": "3*/batch"`, `size "3*/batch"`},
		{"work without its size", `"expr": "3*batch"`, `"expr": "batch"`, "needs a size argument of its element count"},
		{"vector", `"vector": 4`, `"vector": 0`, "positive vector"},
	}
	checkParseErrors(t, good, tests)
	// A size argument needs dims.
	static := string(compiled(t).Plan.JSON())
	bad := strings.Replace(static, `"kind": "param"`, `"kind": "size", "expr": "3"`, 1)
	if _, err := artifact.ParsePlan([]byte(bad)); err == nil || !strings.Contains(err.Error(), "a size argument in a plan without dims") {
		t.Errorf("size argument without dims: %v", err)
	}
}
