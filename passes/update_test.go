package passes_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/passes"
)

// The memory plan writes an update_slice over its operand when nothing reads the operand after
// it: a temp it reads last (in the arena, in_place_of), or an input whose only reader it is and
// whose result is an output of its type (the output's in_place_of). Otherwise the update kernel
// copies the operand and covers the whole result.
func TestUpdateInPlace(t *testing.T) {
	const head = `
  input %cache : f32[2,8,4]
  input %x : f32[2,1,4]
  input %pos : i64[2]`
	for _, tc := range []struct {
		name, body string
		inPlace    bool
		alias      string // the first output's in_place_of
		temp       string // an arena buffer written in place of another
	}{
		{"donated input", `
  %0 = update_slice(%cache, %x, %pos) {axis=1} : f32[2,8,4]
  output new_cache = %0`, true, "cache", ""},
		{"input read by another kernel", `
  %0 = update_slice(%cache, %x, %pos) {axis=1} : f32[2,8,4]
  %1 = reduce_sum(%cache) {axes=[1]} : f32[2,4]
  output new_cache = %0
  output s = %1`, false, "", ""},
		{"input that is an output", `
  %0 = update_slice(%cache, %x, %pos) {axis=1} : f32[2,8,4]
  output new_cache = %0
  output old = %cache`, false, "", ""},
		{"result not an output", `
  %0 = update_slice(%cache, %x, %pos) {axis=1} : f32[2,8,4]
  %1 = reduce_sum(%0) {axes=[1]} : f32[2,4]
  output s = %1`, false, "", ""},
		{"dead temp", `
  %0 = exp(%cache) : f32[2,8,4]
  %1 = update_slice(%0, %x, %pos) {axis=1} : f32[2,8,4]
  %2 = reduce_sum(%1) {axes=[1]} : f32[2,4]
  output s = %2`, true, "", "in place of"},
		{"temp read after the update", `
  %0 = exp(%cache) : f32[2,8,4]
  %1 = update_slice(%0, %x, %pos) {axis=1} : f32[2,8,4]
  %2 = add(%1, %0) : f32[2,8,4]
  %3 = reduce_sum(%2) {axes=[1]} : f32[2,4]
  output s = %3`, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := compile(t, head+tc.body, noPersist)
			var update *passes.Kernel
			for _, k := range res.Kernels.Kernels {
				if k.Kind == passes.Update {
					update = k
				}
			}
			if update == nil {
				t.Fatalf("no update kernel:\n%s", res.Kernels)
			}
			if update.InPlace != tc.inPlace {
				t.Errorf("InPlace = %v, want %v", update.InPlace, tc.inPlace)
			}
			if got := res.Plan.Outputs[0].InPlaceOf; got != tc.alias {
				t.Errorf("output %s in place of %q, want %q", res.Plan.Outputs[0].Name, got, tc.alias)
			}
			if arena := res.Plan.String(); tc.temp != "" && !strings.Contains(arena, tc.temp) || tc.temp == "" && strings.Contains(arena, "in place of") {
				t.Errorf("arena:\n%s", arena)
			}
			if err := passes.CheckPlan(res.Kernels, res.Plan); err != nil {
				t.Error(err)
			}
			// The cost model charges an in-place update its rows: 2·1·4 f32 elements written.
			for _, ks := range res.Stats.PerKernel {
				if ks.Kind == "update" && tc.inPlace != (ks.WriteBytes == 32) {
					t.Errorf("%s writes %d bytes (in place: %v)", ks.Name, ks.WriteBytes, tc.inPlace)
				}
			}
		})
	}
}

// An update kernel reads its rows through views of a projection's output (no copy kernel), but
// never views its operand: the operand must be a buffer it can write over.
func TestUpdateReadsViews(t *testing.T) {
	res := compile(t, `
  input %cache : f32[2,3,8,4]
  input %qkv : f32[2,1,36]
  input %pos : i64[2]
  %0 = slice(%qkv) {start=[0,0,12], limit=[2,1,24]} : f32[2,1,12]
  %1 = reshape(%0) {shape=[2,1,3,4]} : f32[2,1,3,4]
  %2 = transpose(%1) {perm=[0,2,1,3]} : f32[2,3,1,4]
  %3 = update_slice(%cache, %2, %pos) {axis=2} : f32[2,3,8,4]
  output new_cache = %3`, noPersist)
	if n := len(res.Kernels.Kernels); n != 1 || res.Kernels.Kernels[0].Kind != passes.Update || !res.Kernels.Kernels[0].InPlace {
		t.Errorf("want one in-place update kernel reading qkv through its views:\n%s", res.Kernels)
	}
	res = compile(t, `
  input %cache : f32[2,24,4]
  input %x : f32[2,3,1,4]
  input %pos : i64[2]
  %0 = reshape(%cache) {shape=[2,3,8,4]} : f32[2,3,8,4]
  %1 = update_slice(%0, %x, %pos) {axis=2} : f32[2,3,8,4]
  output new_cache = %1`, noPersist)
	for _, k := range res.Kernels.Kernels {
		if k.Kind == passes.Update && strings.Contains(k.Body.String(), "reshape") {
			t.Errorf("the update kernel views its operand:\n%s", k.Body)
		}
	}
}
