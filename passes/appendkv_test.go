package passes_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// A decoding step's attention over two caches it updates at pos; L query rows per head.
const appendStep = `
  input %q : f32[1,2,L,8]
  input %kn : f32[1,2,L,8]
  input %vn : f32[1,2,L,8]
  input %kc : f32[1,2,64,8]
  input %vc : f32[1,2,64,8]
  input %pos : i64[1]
  %0 = update_slice(%kc, %kn, %pos) {axis=2} : f32[1,2,64,8]
  %1 = update_slice(%vc, %vn, %pos) {axis=2} : f32[1,2,64,8]
  %2 = attention(%q, %0, %1, %pos) {mask="position", scale=0.5} : f32[1,2,L,8]
  output o = %2
  output k = %0
  output v = %1`

// TestAppendKV: the appendkv pass gives an attention kernel the updates of the caches it reads
// when the split-KV template takes it and each update writes a donated cache (in place) that
// only the attention reads; a prefill, a cache read by another kernel, an updated cache read
// again or not an output keep their update kernels. The merged kernel is charged the rows it
// writes, not the caches.
func TestAppendKV(t *testing.T) {
	for _, tc := range []struct {
		name, src        string
		updates, appends int // update kernels; caches attention kernels append to
	}{
		{"decode", appendStep, 0, 2},
		{"prefill", strings.ReplaceAll(appendStep, "L,8]", "5,8]"), 2, 0},
		{"cache read by another kernel", appendStep + `
  %3 = reduce_sum(%kc) {axes=[2]} : f32[1,2,8]
  output s = %3`, 1, 1},
		{"updated cache read again", appendStep + `
  %3 = reduce_sum(%1) {axes=[2]} : f32[1,2,8]
  output s = %3`, 1, 1},
		{"updated cache no output", strings.Replace(appendStep, "  output k = %0", "", 1), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.ReplaceAll(tc.src, "L,8]", "1,8]")
			res := compile(t, src, passes.Options{})
			updates, appends := 0, 0
			for i, k := range res.Kernels.Kernels {
				if k.Kind == passes.Update {
					updates++
				}
				if k.Kind != passes.Attention {
					continue
				}
				var rows, other int64
				n := 0
				for j, o := range k.Body.Outputs {
					if o.Value.Op == ops.UpdateSliceOp {
						n++
						rows += int64(o.Value.Args[1].Type.Bytes())
					} else {
						other += k.Writes[j].Bytes()
					}
				}
				appends += n
				if n > 0 && !k.InPlace {
					t.Errorf("%s appends to %d caches but is not in place", k.Name, n)
				}
				var partials int64
				for _, v := range k.Body.Values {
					if p, ok := splitkv.Of(v); ok && v.Op == ops.AttentionOp {
						partials = 8 * int64(p.PartialFloats())
					}
				}
				if got, want := res.Stats.PerKernel[i].WriteBytes, other+rows+partials; n > 0 && got != want {
					t.Errorf("%s writes %d bytes, want its output, partials and rows: %d", k.Name, got, want)
				}
			}
			if updates != tc.updates || appends != tc.appends {
				t.Errorf("%d update kernels, %d caches appended by attention; want %d and %d\n%s", updates, appends, tc.updates, tc.appends, res.Kernels)
			}
		})
	}
}
