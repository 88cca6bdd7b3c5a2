package passes_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// convPool is a conv2d with bias and relu over f32[2,3,8,8] (padding 1: an 8×8 output with 5
// channels) followed by POOL, in the .gir syntax; DT, WEIGHT and EXTRA are filled in per case.
const convPool = `
  input %x : DT[2,3,8,8]
  WEIGHT
  param %b : DT[5]
  %0 = conv2d(%x, %w) {padding=[1,1]} : DT[2,5,8,8]
  %1 = broadcast_in_dim(%b) {dims=[1], shape=[2,5,8,8]} : DT[2,5,8,8]
  %2 = add(%0, %1) : DT[2,5,8,8]
  %3 = relu(%2) : DT[2,5,8,8]
  POOL
  output y = %4
  EXTRA`

func convPoolSrc(dt, weight, pool, extra string) string {
	if weight == "" {
		weight = "param %w : DT[5,3,3,3]"
	}
	r := strings.NewReplacer("WEIGHT", weight, "POOL", pool, "EXTRA", extra)
	return strings.ReplaceAll(r.Replace(convPool), "DT", dt)
}

// Rule (d) with pooling: where a conv2d's epilogue may end in the pooling of its result, and
// where the two stay separate kernels.
func TestConvPoolFusion(t *testing.T) {
	const pool2 = "%4 = max_pool2d(%3) {kernel=[2,2]} : DT[2,5,4,4]"
	for _, tc := range []struct {
		name                 string
		dt, weight, pool, ex string
		want                 string
	}{
		{"2×2 max-pool with stride 2 fuses", "f32", "", pool2, "", "k0_conv_bias_relu_maxpool:contraction"},
		{"explicit stride and zero padding", "f32", "", "%4 = max_pool2d(%3) {kernel=[2,2], stride=[2,2], padding=[0,0]} : DT[2,5,4,4]", "",
			"k0_conv_bias_relu_maxpool:contraction"},
		{"avg-pool fuses too", "f32", "", "%4 = avg_pool2d(%3) {kernel=[2,2]} : DT[2,5,4,4]", "", "k0_conv_bias_relu_avgpool:contraction"},
		{"1×2 and 4×1 windows fuse", "f32", "", "%4 = max_pool2d(%3) {kernel=[4,1]} : DT[2,5,2,8]", "", "k0_conv_bias_relu_maxpool:contraction"},
		{"16-bit convolutions fuse", "bf16", "", pool2, "", "k0_conv_bias_relu_maxpool:contraction"},
		{"the pre-pool value as an output: one kernel writes both", "f32", "", pool2, "output pre = %3",
			"k0_conv_bias_relu_maxpool:contraction"},
		{"elementwise ops after the pooling join", "f32", "", pool2 + "\n  %5 = neg(%4) : DT[2,5,4,4]", "output z = %5",
			"k0_conv_bias_relu_maxpool:contraction"},
		// The epilogue ends in one pooling (found by FuzzPipeline: both merged, and CheckKernels
		// failed after fuse).
		{"a second pooling of the result stays a loop kernel", "f32", "", pool2 + "\n  %5 = avg_pool2d(%3) {kernel=[2,2]} : DT[2,5,4,4]",
			"output z = %5", "k0_conv_bias_relu_maxpool:contraction k1_avgpool:loop"},
		{"overlapping windows (stride 1) do not fuse", "f32", "", "%4 = max_pool2d(%3) {kernel=[2,2], stride=[1,1]} : DT[2,5,7,7]", "",
			"k0_conv_bias_relu:contraction k1_maxpool:loop"},
		{"padded windows do not fuse", "f32", "", "%4 = max_pool2d(%3) {kernel=[2,2], padding=[1,1]} : DT[2,5,5,5]", "",
			"k0_conv_bias_relu:contraction k1_maxpool:loop"},
		{"a 3×3 window (9 pixels) does not fuse", "f32", "", "%4 = max_pool2d(%3) {kernel=[3,3]} : DT[2,5,2,2]", "",
			"k0_conv_bias_relu:contraction k1_maxpool:loop"},
		{"windows that leave a remainder do not fuse", "f32", "", "%4 = max_pool2d(%3) {kernel=[1,3]} : DT[2,5,8,2]", "",
			"k0_conv_bias_relu:contraction k1_maxpool:loop"},
		{"f64 (the direct template) does not fuse", "f64", "", pool2, "", "k0_conv_bias_relu:contraction k1_maxpool:loop"},
		{"a weight view (the direct template) does not fuse", "f32", "param %v : DT[5,3,9]\n  %w = reshape(%v) {shape=[5,3,3,3]} : DT[5,3,3,3]", pool2, "",
			"k0_conv_bias_relu:contraction k1_maxpool:loop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := compile(t, convPoolSrc(tc.dt, tc.weight, tc.pool, tc.ex), passes.Options{})
			if got := labels(res.Kernels); got != tc.want {
				t.Errorf("kernels %s, want %s\n%s", got, tc.want, res.Kernels)
			}
		})
	}
}

// The fused kernel writes the pooled value, and the pre-pool value only when another kernel or
// the caller needs it; the cost report charges what it writes.
func TestConvPoolWrites(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		writes      string
		writeBytes  int64
	}{
		{"pooled only", "", "%y", 2 * 5 * 4 * 4 * 4},
		{"pre-pool output", "output pre = %3", "%pre, %y", 2*5*4*4*4 + 2*5*8*8*4},
		{"pre-pool value read by another kernel", "%5 = reduce_sum(%3) {axes=[2,3]} : f32[2,5]\n  output s = %5", "%t6, %y",
			2*5*4*4*4 + 2*5*8*8*4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := compile(t, convPoolSrc("f32", "", "%4 = max_pool2d(%3) {kernel=[2,2]} : DT[2,5,4,4]", tc.extra), passes.Options{})
			k := res.Kernels.Kernels[0]
			if got := k.Name; got != "k0_conv_bias_relu_maxpool" {
				t.Fatalf("first kernel %s\n%s", got, res.Kernels)
			}
			if !strings.Contains(res.Kernels.String(), "writes("+tc.writes+")") {
				t.Errorf("want writes(%s):\n%s", tc.writes, res.Kernels)
			}
			if got := res.Stats.PerKernel[0].WriteBytes; got != tc.writeBytes {
				t.Errorf("write bytes %d, want %d", got, tc.writeBytes)
			}
		})
	}
}

// CheckKernels rejects a contraction kernel whose pooling does not tile its result.
func TestCheckKernelsPool(t *testing.T) {
	kg := compile(t, convPoolSrc("f32", "", "%4 = max_pool2d(%3) {kernel=[2,2]} : DT[2,5,4,4]", ""), passes.Options{}).Kernels
	if err := passes.CheckKernels(kg); err != nil {
		t.Fatal(err)
	}
	for _, v := range kg.Kernels[0].Body.Values {
		if v.Op == "max_pool2d" {
			// Overlapping padded windows of the same output shape.
			v.Attrs["kernel"], v.Attrs["stride"], v.Attrs["padding"] = []int{3, 3}, []int{2, 2}, []int{1, 1}
		}
	}
	if err := passes.CheckKernels(kg); err == nil || !strings.Contains(err.Error(), "does not tile") {
		t.Errorf("got %v, want a pooling that does not tile", err)
	}
}

// Random convolutions ending in a pooling, with random epilogues, pre-pool consumers and fusion
// bounds, through the whole pipeline with every checker on; the kernel graph must compute what
// the source graph does, bit for bit (checkPipeline). The rule must fire in some of them.
func TestConvPoolRandom(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 40
	}
	fused := 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 11))
		dt := []ir.DType{ir.F32, ir.F32, ir.F16, ir.BF16, ir.F64}[r.IntN(5)]
		nb, c, o := 1+r.IntN(2), 1+r.IntN(3), 1+r.IntN(4)
		h, w, k := 2+r.IntN(7), 2+r.IntN(7), 1+2*r.IntN(2)
		g := ir.NewGraph("t")
		x := g.Input("x", ir.T(dt, nb, c, h, w), nil)
		wt := g.Param("w", ir.T(dt, o, c, k, k), nil)
		ty := ir.T(dt, nb, o, h, w)
		v := g.Add("conv2d", ty, ir.Attrs{"padding": []int{k / 2, k / 2}}, x, wt)
		for range r.IntN(4) {
			switch r.IntN(4) {
			case 0:
				b := g.Param(fmt.Sprintf("b%d", len(g.Values)), ir.T(dt, o), nil)
				v = g.Add("add", ty, nil, v, g.Add("broadcast_in_dim", ty, ir.Attrs{"dims": []int{1}, "shape": []int(ty.Shape)}, b))
			case 1:
				v = g.Add("relu", ty, nil, v)
			case 2:
				v = g.Add("neg", ty, nil, v)
			case 3:
				v = g.Add("mul", ty, nil, v, g.Input(fmt.Sprintf("s%d", len(g.Values)), ty, nil))
			}
		}
		win := [][]int{{2, 2}, {1, 2}, {2, 1}, {1, 4}, {3, 3}}[r.IntN(5)]
		attrs := ir.Attrs{"kernel": win}
		if r.IntN(4) == 0 {
			attrs["stride"] = []int{1, 1}
		}
		op := []string{"max_pool2d", "avg_pool2d"}[r.IntN(2)]
		pt, err := ops.Infer(op, []ir.Type{ty}, attrs)
		if err != nil {
			continue // the window does not fit the image
		}
		p := g.Add(op, pt, attrs, v)
		if r.IntN(2) == 0 {
			p = g.Add("tanh", pt, nil, p)
		}
		g.SetOutput("y", p)
		switch r.IntN(3) {
		case 1:
			g.SetOutput("pre", v)
		case 2:
			g.SetOutput("s", g.Add("reduce_sum", ir.T(dt, nb, o), ir.Attrs{"axes": []int{2, 3}}, v))
		}
		opt := passes.Options{}
		if r.IntN(3) == 0 {
			opt.Fusion = passes.FusionOptions{MaxOps: 1 + r.IntN(8), MaxReads: 1 + r.IntN(4)}
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if strings.Contains(checkPipeline(t, g, opt, seed).Kernels.String(), "pool contraction") {
				fused++
			}
		})
	}
	if fused == 0 {
		t.Errorf("the rule fired in none of %d graphs", n)
	}
	t.Logf("%d of %d fused", fused, n)
}
