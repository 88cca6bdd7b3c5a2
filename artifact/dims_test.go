package artifact_test

import (
	"fmt"
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

// rowGraph's kernel is a row reduction over batch·seq rows whose grid follows them, and a GEMM
// whose grid.y follows its M in tiles of 128.
const rowGraph = `graph r {
  dims { batch in [1,300], seq in [1,2] }
  input %x : f32[batch,seq,3]
  param %w : f32[5,3] {init="zeros"}
  %0 = reduce_sum(%x) {axes=[2]} : f32[batch,seq]
  %1 = reshape(%x) {shape=[600,3]} : f32[batch*seq,3]
  %2 = dot_general(%1, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[batch*seq,5]
  output s = %0
  output y = %2
}
`

// A row kernel's work records its tile and grid axis; its grid at a size is the bound's with
// that axis following the size; a bad tile or axis is one error.
func TestParsePlanRowWork(t *testing.T) {
	a := compiledText(t, rowGraph)
	var works []string
	for _, k := range a.Plan.Kernels {
		if k.Work == nil {
			t.Fatalf("kernel %s has no work", k.Name)
		}
		works = append(works, fmt.Sprintf("%s %v %+v", k.Name, k.Grid, *k.Work))
	}
	want := []string{
		"k0_sum [600 1 1] {Elements:batch*seq Vector:1 MaxBlocks:600 Tile:1 Axis:0}",
		"k1_matmul [1 5 1] {Elements:batch*seq Vector:1 MaxBlocks:5 Tile:128 Axis:1}",
	}
	if strings.Join(works, "\n") != strings.Join(want, "\n") {
		t.Errorf("kernels:\n%s\nwant:\n%s", strings.Join(works, "\n"), strings.Join(want, "\n"))
	}
	for _, tc := range []struct {
		k    int
		n    int64
		want [3]int
	}{{0, 7, [3]int{7, 1, 1}}, {0, 0, [3]int{1, 1, 1}}, {0, 600, [3]int{600, 1, 1}}, {1, 1, [3]int{1, 1, 1}}, {1, 129, [3]int{1, 2, 1}}, {1, 600, [3]int{1, 5, 1}}} {
		k := a.Plan.Kernels[tc.k]
		if got := k.Work.Grid(tc.n, k.Grid, k.Block); got != tc.want {
			t.Errorf("%s at %d: grid %v, want %v", k.Name, tc.n, got, tc.want)
		}
	}
	good := string(a.Plan.JSON())
	if _, err := artifact.ParsePlan([]byte(good)); err != nil {
		t.Fatalf("the plan: %v", err)
	}
	checkParseErrors(t, good, []parseCase{
		{"negative tile", `"tile": 128`, `"tile": -1`, "want tile >= 0 and a grid axis 0 to 2"},
		{"axis past z", `"axis": 1`, `"axis": 3`, "want tile >= 0 and a grid axis 0 to 2"},
		{"axis of a loop", `"tile": 128`, `"tile": 0`, "want tile >= 0 and a grid axis 0 to 2 (0 for a loop)"},
		{"unknown field", `"tile": 128`, `"tiles": 128`, "unknown field"},
	})
}
