package nvvm

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
)

// A gather index outside its table is written to the launch's error word as codegen/ptx writes
// it (site, element of the indices, the index as an i64; plan.IndexChecks) and row 0 is read in
// its place, so the two producers leave the same word and the same outputs (before, NVVM's
// gathers trapped and left the word zero). The indices are read as they are (i64), computed in
// the kernel (i32, negative after the shift), and taken by the second of two gathers (site 2).
func TestGatherErrorWord(t *testing.T) {
	p := requireProducer(t)
	for _, tc := range []struct {
		name, src string
		ids       string // the input holding the indices
		elem      int    // the element made bad
		set       int64  // what it holds
		site      uint64
		index     int64 // the index the gather sees
	}{
		{"input_i64", `graph g {
  input %t : f32[10,8]
  input %ids : i64[2,3]
  %0 = gather(%t, %ids) : f32[2,3,8]
  %1 = relu(%0) : f32[2,3,8]
  output y = %1
}`, "ids", 4, 1000, 1, 1000},
		{"computed_i32", `graph g {
  input %t : f32[10,8]
  input %ids : i32[6]
  %0 = constant() {dtype=i32, shape=[6], value=[-7]} : i32[6]
  %1 = add(%ids, %0) : i32[6]
  %2 = gather(%t, %1) : f32[6,8]
  output y = %2
}`, "ids", 5, 3, 1, -4},
		{"second_site", `graph g {
  input %t : f32[10,8]
  input %u : f32[5,8]
  input %a : i32[4]
  input %b : i32[4]
  %0 = gather(%t, %a) : f32[4,8]
  %1 = gather(%u, %b) : f32[4,8]
  %2 = add(%0, %1) : f32[4,8]
  output y = %2
}`, "b", 2, 5, 2, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse(tc.name+".gir", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			k := plan.Kernel{Name: "k_" + tc.name, Graph: g}
			checks := plan.IndexChecks(k)
			if len(checks) < int(tc.site) {
				t.Fatalf("index checks %v, want site %d", checks, tc.site)
			}
			in := inputsFor(g, 3)
			if tc.name == "computed_i32" { // valid before the shift of -7
				for i := range in["ids"].I {
					in["ids"].I[i] = 7 + int64(i%3)
				}
			}
			in[tc.ids].I[tc.elem] = tc.set
			nv, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, nv, []plan.Kernel{k})
			got, _, word := runWord(t, nv, k, launches[0], in)
			pt, plaunches, err := ptx.Module([]plan.Kernel{k}, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			want, _, pword := runWord(t, pt, k, plaunches[0], in)
			if len(word) != plan.ErrorWordBytes {
				t.Fatalf("NVVM launch has no error word (params %v)", launches[0].Params)
			}
			site, elem := binary.LittleEndian.Uint64(word), binary.LittleEndian.Uint64(word[8:])
			index := int64(binary.LittleEndian.Uint64(word[16:]))
			if site != tc.site || elem != uint64(tc.elem) || index != tc.index {
				t.Errorf("error word: site %d, element %d, index %d; want %d, %d, %d", site, elem, index, tc.site, tc.elem, tc.index)
			}
			if !bytes.Equal(word, pword) {
				t.Errorf("error word %x, codegen/ptx's %x", word, pword)
			}
			compare(t, "y (codegen/ptx)", got["y"], want["y"], true, ir.F32, false, 1)
		})
	}
}
