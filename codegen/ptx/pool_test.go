package ptx

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

func TestPooling(t *testing.T) {
	cases := []struct {
		op                  string
		h, w, k, stride, pd int
		includePad          bool
	}{
		{"max_pool2d", 8, 8, 2, 2, 0, true},
		{"max_pool2d", 9, 7, 3, 2, 1, true},
		{"avg_pool2d", 8, 8, 2, 2, 0, true},
		{"avg_pool2d", 9, 7, 3, 2, 1, true},
		{"avg_pool2d", 9, 7, 3, 1, 1, false},
		{"avg_pool2d", 7, 7, 7, 7, 0, true}, // global average pooling
	}
	for _, c := range cases {
		for _, nc := range [][2]int{{1, 1}, {2, 3}, {4, 16}} {
			name := fmt.Sprintf("%s_%dx%d_k%d_s%d_p%d_%v_n%dc%d", c.op, c.h, c.w, c.k, c.stride, c.pd, c.includePad, nc[0], nc[1])
			t.Run(name, func(t *testing.T) {
				g := ir.NewGraph("pool")
				x := g.Input("x", ir.T(ir.F32, nc[0], nc[1], c.h, c.w), nil)
				oh, ow := (c.h+2*c.pd-c.k)/c.stride+1, (c.w+2*c.pd-c.k)/c.stride+1
				attrs := ir.Attrs{"kernel": []int{c.k, c.k}, "stride": []int{c.stride, c.stride}, "padding": []int{c.pd, c.pd}}
				if c.op == "avg_pool2d" {
					attrs["count_include_pad"] = c.includePad
				}
				p := g.Add(c.op, ir.T(ir.F32, nc[0], nc[1], oh, ow), attrs, x)
				g.SetOutput("y", g.Add("relu", p.Type, nil, p))
				in := inputsFor(g, 5, 2)
				in["x"].F[0] = nan()
				checkKernel(t, Kernel{Name: "k_pool_relu", Graph: g}, in, true)
			})
		}
	}
}
