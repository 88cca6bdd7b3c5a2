package ops

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// TestStridedView evaluates view chains over a buffer of distinct values and checks that every
// element is the one the strides name, and that a reshape merging non-contiguous dims is refused.
func TestStridedView(t *testing.T) {
	type step struct {
		op    string
		attrs ir.Attrs
	}
	for _, c := range []struct {
		name  string
		shape []int
		steps []step
		ok    bool
	}{
		{"heads", []int{2, 5, 12}, []step{{"reshape", ir.Attrs{"shape": []int{2, 5, 3, 4}}}, {"transpose", ir.Attrs{"perm": []int{0, 2, 1, 3}}}}, true},
		{"chunk then heads", []int{2, 5, 36}, []step{{"slice", ir.Attrs{"start": []int{0, 0, 12}, "limit": []int{2, 5, 24}}},
			{"reshape", ir.Attrs{"shape": []int{2, 5, 3, 4}}}, {"transpose", ir.Attrs{"perm": []int{0, 2, 1, 3}}}}, true},
		{"kᵀ", []int{2, 3, 5, 4}, []step{{"transpose", ir.Attrs{"perm": []int{0, 1, 3, 2}}}}, true},
		{"broadcast heads", []int{2, 1, 5, 4}, []step{{"broadcast_in_dim", ir.Attrs{"dims": []int{0, 1, 2, 3}, "shape": []int{2, 3, 5, 4}}}}, true},
		{"unsqueeze", []int{5, 4}, []step{{"reshape", ir.Attrs{"shape": []int{1, 5, 1, 4, 1}}}}, true},
		{"strided slice", []int{6, 8}, []step{{"slice", ir.Attrs{"start": []int{1, 0}, "limit": []int{6, 8}, "stride": []int{2, 3}}}}, true},
		{"split after transpose", []int{2, 3, 4}, []step{{"transpose", ir.Attrs{"perm": []int{1, 0, 2}}}, {"reshape", ir.Attrs{"shape": []int{3, 2, 2, 2}}}}, true},
		{"merge contiguous", []int{2, 3, 4}, []step{{"reshape", ir.Attrs{"shape": []int{6, 4}}}}, true},
		{"merge transposed", []int{2, 3, 4}, []step{{"transpose", ir.Attrs{"perm": []int{0, 2, 1}}}, {"reshape", ir.Attrs{"shape": []int{2, 12}}}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := ir.NewGraph("v")
			x := g.Input("x", ir.T(ir.F32, c.shape...), nil)
			v := x
			for _, s := range c.steps {
				ty, err := Infer(s.op, []ir.Type{v.Type}, s.attrs)
				if err != nil {
					t.Fatal(err)
				}
				v = g.Add(s.op, ty, s.attrs, v)
			}
			base, off, strides, ok := StridedView(v)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
			if !ok {
				return
			}
			if base != x {
				t.Fatalf("base is %s, want x", base.Op)
			}
			xs := tensor.New(x.Type)
			for i := range xs.F {
				xs.F[i] = float64(i)
			}
			val := xs
			for _, w := range g.Values[1:] {
				var err error
				if val, err = Eval(w, []*tensor.Tensor{val}); err != nil {
					t.Fatal(err)
				}
			}
			idx := make([]int, len(v.Type.Shape))
			for i := range val.F {
				at := off
				for d, n := range idx {
					at += n * strides[d]
				}
				if val.F[i] != float64(at) {
					t.Fatalf("element %v is x[%v], the strides %v (offset %d) say x[%d]", idx, val.F[i], strides, off, at)
				}
				for d := len(idx) - 1; d >= 0; d-- {
					if idx[d]++; idx[d] < v.Type.Shape[d] {
						break
					}
					idx[d] = 0
				}
			}
		})
	}
}
