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
		{"max_pool2d", 9, 11, 3, 1, 0, true},
		{"max_pool2d", 13, 13, 3, 2, 0, true}, // overlapping windows
		{"max_pool2d", 6, 9, 2, 3, 0, true},   // windows skip columns and rows
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

// A pool read at the output's linear index stages its input range through shared memory (the
// pool tile): the input may be computed, the output reshaped, the dtype 16-bit; every block's
// loads cover whole sectors. An image row too wide for the stage keeps per-thread window reads.
func TestPoolTile(t *testing.T) {
	checkStaged(t, []stagedCase{
		{"relu_pool_reshape", `graph g {
  input %x : f32[3,5,14,14]
  %0 = relu(%x) : f32[3,5,14,14]
  %1 = max_pool2d(%0) {kernel=[2,2], padding=[0,0], stride=[2,2]} : f32[3,5,7,7]
  %2 = reshape(%1) {shape=[3,245]} : f32[3,245]
  output y = %2
}`, true, true},
		{"f16_avg", `graph g {
  input %x : f16[2,8,10,12]
  %0 = avg_pool2d(%x) {kernel=[2,2], padding=[0,0], stride=[2,2]} : f16[2,8,5,6]
  output y = %0
}`, true, true},
		{"padded_3x3", `graph g {
  input %x : f32[2,4,17,9]
  %0 = max_pool2d(%x) {kernel=[3,3], padding=[1,1], stride=[2,2]} : f32[2,4,9,5]
  output y = %0
}`, true, true},
		{"wide_rows", `graph g {
  input %x : f32[1,1,8,8192]
  %0 = max_pool2d(%x) {kernel=[2,2], padding=[0,0], stride=[2,2]} : f32[1,1,4,4096]
  output y = %0
}`, false, false},
	})
}
