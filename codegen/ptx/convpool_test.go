package ptx

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// A conv2d whose epilogue ends in a pooling (the passes fuse it where the windows tile the
// output), on every precision path: f32 FFMA, tf32, f16 and bf16 on mma.sync. Odd channel
// counts, batches, channels and pixels past one tile, groups, windows of 2 and 4 pixels, and
// the pre-pool value as a second output.
func TestConvPool(t *testing.T) {
	cases := []struct {
		n, c, h, w, o, k, pad, groups int
		pool                          string
		win                           [2]int
		pre                           bool // the pre-pool value is an output too
		f32                           bool // the epilogue casts to f32 first, as autocast does
	}{
		{2, 3, 8, 8, 5, 3, 1, 1, "max_pool2d", [2]int{2, 2}, false, false},
		{1, 4, 12, 10, 16, 3, 1, 1, "avg_pool2d", [2]int{2, 2}, false, false},
		{3, 8, 6, 6, 130, 1, 0, 1, "max_pool2d", [2]int{1, 2}, true, false}, // channels past one tile
		{2, 5, 10, 7, 7, 3, 1, 1, "max_pool2d", [2]int{2, 1}, false, false}, // OH·OW = 70: windows of 2 rows
		{3, 4, 16, 16, 6, 5, 2, 1, "max_pool2d", [2]int{2, 2}, true, false}, // pixels past one tile
		{1, 6, 8, 8, 4, 3, 1, 2, "max_pool2d", [2]int{4, 1}, false, false},  // two groups
		{2, 3, 8, 8, 5, 3, 1, 1, "max_pool2d", [2]int{2, 2}, true, true},    // a train step's forward conv
	}
	for _, prec := range convPrecisions {
		for _, c := range cases {
			name := fmt.Sprintf("%s_n%d_c%d_%dx%d_o%d_k%d_g%d_%s%dx%d_pre%v_f32%v", prec, c.n, c.c, c.h, c.w, c.o, c.k, c.groups, c.pool, c.win[0], c.win[1], c.pre, c.f32)
			t.Run(name, func(t *testing.T) {
				d := usePrecision(t, prec)
				g := ir.NewGraph("convpool")
				x := g.Input("x", ir.T(d, c.n, c.c, c.h, c.w), nil)
				w := g.Param("w", ir.T(d, c.o, c.c/c.groups, c.k, c.k), nil)
				oh, ow := c.h+2*c.pad-c.k+1, c.w+2*c.pad-c.k+1
				y := g.Add("conv2d", ir.T(d, c.n, c.o, oh, ow), ir.Attrs{"padding": []int{c.pad, c.pad}, "groups": c.groups}, x, w)
				if c.f32 {
					d = ir.F32
					y = g.Add("cast", ir.T(d, c.n, c.o, oh, ow), ir.Attrs{"to": d}, y)
				}
				bias := g.Param("b", ir.T(d, c.o), nil)
				ty := ir.T(d, c.n, c.o, oh, ow)
				bb := g.Add("broadcast_in_dim", ty, ir.Attrs{"shape": []int(ty.Shape), "dims": []int{1}}, bias)
				r := g.Add("relu", ty, nil, g.Add("add", ty, nil, y, bb))
				pt := ir.T(d, c.n, c.o, oh/c.win[0], ow/c.win[1])
				g.SetOutput("p", g.Add(c.pool, pt, ir.Attrs{"kernel": c.win[:]}, r))
				if c.pre {
					g.SetOutput("pre", r)
				}
				res := checkKernel(t, Kernel{Name: "k_conv_bias_relu_pool", Graph: g}, inputsFor(g, 5, 1), false)
				if res == nil {
					return
				}
				if prec != "f32" && !strings.Contains(res.ptx, "mma.sync") {
					t.Errorf("%s: no mma.sync", prec)
				}
				if res.stats.SharedBankConflicts != 0 {
					t.Errorf("%d shared bank conflicts", res.stats.SharedBankConflicts)
				}
				for arch, n := range res.regs {
					// The FFMA template with a single k step (K ≤ 8) goes uncapped by design.
					if n > 128 && (prec != "f32" || c.c/c.groups*c.k*c.k > 8) {
						t.Errorf("%s: %d registers (over 128 halves the occupancy)", arch, n)
					}
				}
			})
		}
	}
}

// The pooled max is the reference's, bit for bit: NaN propagates and max(-0, +0) = +0 in
// either order. A 1×1 convolution with weight 1 copies its image exactly (small integers, zeros
// and NaN, exact in every precision); the epilogue multiplies by a per-pixel sign, which makes
// -0 from +0; every 2×2 window holds one of the patterns below.
func TestConvPoolMaxSemantics(t *testing.T) {
	inf := math.Inf(1)
	windows := [][2][4]float64{ // image values, signs
		{{0, 0, 0, 0}, {-1, 1, -1, -1}}, // -0, +0, -0, -0 → +0
		{{0, 0, 0, 0}, {1, -1, -1, -1}}, // +0 first → +0
		{{0, 0, 0, 0}, {-1, -1, -1, -1}},
		{{1, nan(), 2, 3}, {1, 1, 1, 1}},
		{{nan(), 1, 2, 3}, {1, 1, 1, 1}},
		{{-2, -3, -4, -1}, {1, 1, 1, 1}},
		{{inf, 1, 2, 3}, {-1, -1, -1, -1}},
		{{5, 0, 0, 7}, {1, -1, 1, -1}},
	}
	for _, prec := range convPrecisions {
		t.Run(prec, func(t *testing.T) {
			d := usePrecision(t, prec)
			// One image, one channel, 2 rows of windows: [1,1,4,2·len/2].
			h, w := 4, len(windows)
			g := ir.NewGraph("convpool")
			x := g.Input("x", ir.T(d, 1, 1, h, w), nil)
			wt := g.Param("w", ir.T(d, 1, 1, 1, 1), nil)
			s := g.Input("s", ir.T(d, 1, 1, h, w), nil)
			ty := ir.T(d, 1, 1, h, w)
			y := g.Add("mul", ty, nil, g.Add("conv2d", ty, nil, x, wt), s)
			g.SetOutput("p", g.Add("max_pool2d", ir.T(d, 1, 1, h/2, w/2), ir.Attrs{"kernel": []int{2, 2}}, y))
			xs, ss := tensor.New(x.Type), tensor.New(s.Type)
			for i, win := range windows {
				wr, wc := i/(w/2), i%(w/2) // window (wr, wc)
				for j := range 4 {
					at := (2*wr+j/2)*w + 2*wc + j%2
					xs.F[at] = win[0][j]
					ss.F[at] = win[1][j]
				}
			}
			ones := tensor.New(wt.Type)
			ones.F[0] = 1
			checkKernel(t, Kernel{Name: "k_conv_mul_maxpool", Graph: g}, map[string]*tensor.Tensor{"x": xs, "s": ss, "w": ones}, true)
		})
	}
}

// A pooling the templates cannot compute in the conv's epilogue is an error, not a wrong kernel
// (the passes never fuse one).
func TestConvPoolRejects(t *testing.T) {
	for _, tc := range []struct{ pool, want string }{
		{"max_pool2d(%1) {kernel=[2,2], stride=[1,1]} : f32[1,4,7,7]", "do not tile"},
		{"max_pool2d(%1) {kernel=[3,3], stride=[3,3]} : f32[1,4,2,2]", "do not tile"},
		{"avg_pool2d(%1) {kernel=[2,2], padding=[1,1]} : f32[1,4,5,5]", "do not tile"},
	} {
		g := parse(t, `graph g {
  input %x : f32[1,3,8,8]
  param %w : f32[4,3,3,3]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f32[1,4,8,8]
  %1 = relu(%0) : f32[1,4,8,8]
  %2 = `+tc.pool+`
  output y = %2
}`)
		_, _, err := Generate(Kernel{Name: "k", Graph: g}, Target{SM: 80})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error saying %q", tc.pool, err, tc.want)
		}
	}
}

// A train step's forward conv keeps the max_pool2d gradient's mask in the same kernel: the
// pre-pool value at each window's first pixel (a slice of stride 2) compared with the pooled
// one. The slice reaches the convolution at an index of its own, which must resolve to the
// window's pixel (it emitted an empty operand, which the simulator refused to load); on every
// precision path.
func TestConvPoolGradientMask(t *testing.T) {
	for _, prec := range convPrecisions {
		t.Run(prec, func(t *testing.T) {
			d := usePrecision(t, prec)
			g := ir.NewGraph("convpool_mask")
			x := g.Input("x", ir.T(d, 2, 3, 8, 8), nil)
			w := g.Param("w", ir.T(d, 5, 3, 3, 3), nil)
			ty := ir.T(d, 2, 5, 8, 8)
			y := g.Add("conv2d", ty, ir.Attrs{"padding": []int{1, 1}}, x, w)
			bb := g.Add("broadcast_in_dim", ty, ir.Attrs{"shape": []int(ty.Shape), "dims": []int{1}}, g.Param("b", ir.T(d, 5), nil))
			r := g.Add("relu", ty, nil, g.Add("add", ty, nil, y, bb))
			pt := ir.T(d, 2, 5, 4, 4)
			p := g.Add("max_pool2d", pt, ir.Attrs{"kernel": []int{2, 2}, "stride": []int{2, 2}}, r)
			first := g.Add("slice", pt, ir.Attrs{"start": []int{0, 0, 0, 0}, "limit": []int{2, 5, 7, 7}, "stride": []int{1, 1, 2, 2}}, r)
			g.SetOutput("pre", r)
			g.SetOutput("p", p)
			g.SetOutput("mask", g.Add("eq", ir.T(ir.Bool, 2, 5, 4, 4), nil, first, p))
			k := Kernel{Name: "k_conv_bias_relu_maxpool", Graph: g}
			if c, err := ContractionPlan(k, Target{SM: 80}); err != nil || c.Kind == "direct" {
				t.Fatalf("plan %+v, %v: want a tiled template (its epilogue pools)", c, err)
			}
			checkKernel(t, k, inputsFor(g, 5, 1), false)
		})
	}
}
