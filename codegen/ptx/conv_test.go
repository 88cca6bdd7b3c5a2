package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// convPrecisions are the paths of the tiled conv2d templates: f32 on FFMA; tf32 (f32 with
// Target.TF32: tensor cores too, m16n8k8, the image copied by 4-byte cp.async), f16 and bf16
// on mma.sync.
var convPrecisions = []string{"f32", "tf32", "f16", "bf16"}

// usePrecision returns the dtype of precision prec and, for tf32, sets the harness target for
// the rest of the test; with -short it skips bf16, which takes the f16 path.
func usePrecision(t *testing.T, prec string) ir.DType {
	if testing.Short() && prec == "bf16" {
		t.Skip("-short: bf16 takes the f16 path")
	}
	if prec == "tf32" {
		harnessTarget = Target{SM: 80, TF32: true}
		t.Cleanup(func() { harnessTarget = Target{SM: 80} })
	}
	return map[string]ir.DType{"f32": ir.F32, "tf32": ir.F32, "f16": ir.F16, "bf16": ir.BF16}[prec]
}

func TestConv2d(t *testing.T) {
	cases := []struct {
		n, c, h, w, o, k, stride, pad, dil int
		groups                             int
	}{
		{1, 1, 1, 1, 1, 1, 1, 0, 1, 1},
		{1, 3, 8, 8, 4, 3, 1, 1, 1, 1},
		{2, 5, 9, 7, 6, 3, 2, 1, 1, 1},
		{1, 4, 10, 10, 3, 3, 1, 2, 2, 1},
		{2, 16, 12, 12, 130, 1, 1, 0, 1, 1}, // 1×1 conv, channels past one tile
		{3, 8, 14, 14, 16, 5, 1, 2, 1, 0},   // pixels past one tile
		{2, 8, 9, 9, 8, 3, 1, 1, 1, 8},      // depthwise
		{1, 6, 8, 8, 4, 3, 2, 1, 1, 2},      // two groups
		{1, 4, 6, 6, 24, 3, 1, 1, 1, 1},     // a 32-column FFMA tile, partly filled
		{1, 3, 7, 5, 40, 3, 1, 1, 1, 1},     // a 64-column FFMA tile, partly filled
		{1, 8, 5, 5, 20, 1, 1, 0, 1, 2},     // 10 channels per group: 16-column tiles
	}
	for _, prec := range convPrecisions {
		tf32 := prec == "tf32"
		for _, c := range cases {
			groups := max(1, c.groups)
			name := fmt.Sprintf("%s_n%d_c%d_%dx%d_o%d_k%d_s%d_p%d_d%d_g%d", prec, c.n, c.c, c.h, c.w, c.o, c.k, c.stride, c.pad, c.dil, groups)
			t.Run(name, func(t *testing.T) {
				d := usePrecision(t, prec)
				g := ir.NewGraph("conv")
				x := g.Input("x", ir.T(d, c.n, c.c, c.h, c.w), nil)
				w := g.Param("w", ir.T(d, c.o, c.c/groups, c.k, c.k), nil)
				bias := g.Param("b", ir.T(d, c.o), nil)
				oh := (c.h+2*c.pad-c.dil*(c.k-1)-1)/c.stride + 1
				ow := (c.w+2*c.pad-c.dil*(c.k-1)-1)/c.stride + 1
				ty := ir.T(d, c.n, c.o, oh, ow)
				y := g.Add("conv2d", ty, ir.Attrs{"stride": []int{c.stride, c.stride}, "padding": []int{c.pad, c.pad},
					"dilation": []int{c.dil, c.dil}, "groups": groups}, x, w)
				bb := g.Add("broadcast_in_dim", ty, ir.Attrs{"shape": []int(ty.Shape), "dims": []int{1}}, bias)
				g.SetOutput("y", g.Add("relu", ty, nil, g.Add("add", ty, nil, y, bb)))
				k := Kernel{Name: "k_conv_bias_relu", Graph: g}
				res := checkKernel(t, k, inputsFor(g, 9, 1), false)
				if prec == "f32" || res == nil {
					return
				}
				// 16-bit and tf32 convolutions run on tensor cores: f32 accumulators, no bank
				// conflicts. The image side's tf32 fragments load with ld.shared.b32.
				mma, frag := "mma.sync.aligned.m16n8k16", "ldmatrix"
				if tf32 {
					mma, frag = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "ld.shared.b32"
				}
				if !strings.Contains(res.ptx, mma) || !strings.Contains(res.ptx, frag) || strings.Contains(res.ptx, "fallback") {
					t.Errorf("no %s / %s, or a fallback", mma, frag)
				}
				if res.stats.SharedBankConflicts != 0 {
					t.Errorf("%d shared bank conflicts", res.stats.SharedBankConflicts)
				}
				for arch, n := range res.regs {
					if n > 128 {
						t.Errorf("%s: %d registers (over 128 halves the occupancy)", arch, n)
					}
				}
			})
		}
	}
}

// Convolution results go out in groups of 4 consecutive pixels of a channel wherever a plane
// holds whole groups (OH·OW % 4 = 0), across image rows too: f32 from the register blocks
// (cnn's 14×14 planes stored 23% of their sectors with one pixel per store), f16 and bf16
// through the staged tensor-core epilogue, 16 pixels of a channel per 4 threads (whole sectors
// where planes are multiples of 32 bytes, as 16×16 ones are; docs/perf.md has 14×14).
func TestConvStores(t *testing.T) {
	for _, d := range []string{"f32", "f16", "bf16"} {
		t.Run(d, func(t *testing.T) {
			hw := map[string]string{"f32": "14,14", "f16": "16,16", "bf16": "16,16"}[d]
			src := strings.ReplaceAll(strings.ReplaceAll(`graph g {
  input %x : f32[2,16,HW]
  param %w : f32[32,16,3,3]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f32[2,32,HW]
  %1 = relu(%0) : f32[2,32,HW]
  output y = %1
}`, "f32", d), "HW", hw)
			g := parse(t, src)
			res := checkKernel(t, Kernel{Name: "k_conv_" + d, Graph: g}, inputsFor(g, 6, 1), false)
			if res == nil {
				return
			}
			st := res.stats
			if eff := float64(st.GlobalStoreBytes) / float64(32*st.GlobalStoreSectors); eff < 0.9 {
				t.Errorf("stores %.0f%% coalesced", 100*eff)
			}
			if st.SharedBankConflicts != 0 {
				t.Errorf("%d bank conflicts", st.SharedBankConflicts)
			}
		})
	}
}
