package onnx

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend/onnx/onnxpb"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

func TestPermutations(t *testing.T) {
	for m, count := range []int{1, 1, 2, 6, 24} {
		ps := permutations(m)
		if len(ps) != count {
			t.Fatalf("%d: %d permutations, want %d", m, len(ps), count)
		}
		seen := map[string]bool{}
		for _, p := range ps {
			inv := 0
			for i := range p.perm {
				for j := i + 1; j < len(p.perm); j++ {
					if p.perm[i] > p.perm[j] {
						inv++
					}
				}
			}
			if want := 1 - 2*(inv%2); p.sign != want {
				t.Fatalf("%v: sign %d, want %d (%d inversions)", p.perm, p.sign, want, inv)
			}
			key := fmt.Sprint(p.perm)
			if seen[key] {
				t.Fatalf("%v twice", p.perm)
			}
			seen[key] = true
		}
	}
}

func TestDet(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		x     []float64
		want  []float64
		err   string
	}{
		{[]int{1, 1}, []float64{-3}, []float64{-3}, ""},
		{[]int{2, 3, 3}, []float64{2, 0, 1, 1, 3, 2, 1, 1, 1, 1, 2, 3, 0, 1, 4, 5, 6, 0}, []float64{0, 1}, ""},
		{[]int{4, 4}, []float64{1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 5, 6, 0, 0, 7, 8}, []float64{4}, ""},
		{[]int{2, 0, 0}, nil, []float64{1, 1}, ""},
		{[]int{5, 5}, make([]float64, 25), nil, "Det of 5×5 matrices is not supported"},
		{[]int{2, 3}, make([]float64, 6), nil, "square matrices"},
	} {
		data := model(13, &onnxpb.GraphProto{
			Name:   ptr("det"),
			Input:  []*onnxpb.ValueInfoProto{valueInfo("x", onnxFloat, anys(tc.shape)...)},
			Node:   []*onnxpb.NodeProto{nodeP("Det", "d", []string{"x"}, []string{"y"})},
			Output: []*onnxpb.ValueInfoProto{{Name: ptr("y")}},
		})
		m, err := Import("det.onnx", data, "", Options{})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%v: got %v, want an error with %q", tc.shape, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		x := tensor.FromFloats(ir.T(ir.F32, tc.shape...), tc.x)
		out, err := ref.Run(m.Graph, map[string]*tensor.Tensor{"x": x}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := out["y"].F
		if len(got) != len(tc.want) {
			t.Fatalf("%v: det %v, want %v", tc.shape, got, tc.want)
		}
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-9 {
				t.Fatalf("%v: det %v, want %v", tc.shape, got, tc.want)
			}
		}
	}
}

func anys(v []int) []any {
	a := make([]any, len(v))
	for i, x := range v {
		a[i] = x
	}
	return a
}
