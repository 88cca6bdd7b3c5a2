package ptx

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/sim"
)

// A conv2d of N ≤ 64 output channels per group runs on a tensor-core tile as narrow as N allows
// (TileN = 16, 32 or 64, the least ≥ N; 128 past 64): 8 warps of 16 rows × TileN, so the mma
// it issues cover TileN columns, not 128. Each case runs on the simulator with its sanitizers
// against the reference (ptxas sm_80 and sm_90, no spills), and the simulator's count of mma
// instructions is exactly the tile's: groups · ceil(M/128)·128 rows · ceil(N/TileN)·TileN
// columns · K rounded up to the k step, in 16×8×KStep mma. Past the rows and k the padding
// adds, useful multiply-adds are at least N/TileN of the mma's (the 128-wide tile gave N/128).
func TestConvMMANarrowTile(t *testing.T) {
	cases := []struct {
		n, c, hw, o, k, stride, groups int
		pool                           bool
	}{
		{2, 4, 10, 1, 3, 1, 1, false},
		{2, 4, 10, 3, 3, 1, 1, false},
		{2, 4, 10, 8, 3, 1, 1, false},
		{2, 4, 10, 16, 3, 1, 1, false},
		{2, 4, 10, 24, 3, 1, 1, false},
		{2, 4, 10, 32, 3, 1, 1, false},
		{2, 4, 10, 64, 3, 1, 1, false},
		{2, 4, 10, 65, 3, 1, 1, false}, // keeps the 128-wide tile
		{1, 8, 9, 40, 3, 1, 1, false},  // OH·OW = 81: the fragment epilogue
		{1, 8, 10, 48, 3, 1, 2, false}, // two groups of 24 channels
		{2, 4, 12, 16, 3, 2, 1, false}, // stride 2
		{2, 4, 8, 24, 3, 1, 1, true},   // max_pool2d in the epilogue
		{1, 4, 8, 64, 3, 1, 1, true},   // a pooled 64-column tile: two staged passes
	}
	for _, prec := range []string{"f16", "bf16", "tf32"} {
		for _, c := range cases {
			name := fmt.Sprintf("%s_n%d_c%d_%d_o%d_s%d_g%d_pool%v", prec, c.n, c.c, c.hw, c.o, c.stride, c.groups, c.pool)
			t.Run(name, func(t *testing.T) {
				d := usePrecision(t, prec)
				g := ir.NewGraph("convmma")
				x := g.Input("x", ir.T(d, c.n, c.c, c.hw, c.hw), nil)
				w := g.Param("w", ir.T(d, c.o, c.c/c.groups, c.k, c.k), nil)
				ohw := (c.hw+2-c.k)/c.stride + 1
				ty := ir.T(d, c.n, c.o, ohw, ohw)
				y := g.Add("conv2d", ty, ir.Attrs{"stride": []int{c.stride, c.stride}, "padding": []int{1, 1}, "groups": c.groups}, x, w)
				y = g.Add("relu", ty, nil, y)
				if c.pool {
					y = g.Add("max_pool2d", ir.T(d, c.n, c.o, ohw/2, ohw/2), ir.Attrs{"kernel": []int{2, 2}}, y)
				}
				g.SetOutput("y", y)
				k := Kernel{Name: "k_conv_mma", Graph: g}
				plan, err := GEMMPlan(k, harnessTarget)
				if err != nil || plan.MMA == nil {
					t.Fatalf("plan %+v, %v; want tensor cores", plan, err)
				}
				nPer := c.o / c.groups
				tileN := 128
				for _, w := range []int{64, 32, 16} {
					if nPer <= w {
						tileN = w
					}
				}
				if plan.TileN != tileN {
					t.Errorf("tile %d columns, want %d", plan.TileN, tileN)
				}
				// Every copy of B lands inside its buffer (narrow tiles shrink it).
				if b := plan.MMA.Sides[1]; b.KContig {
					rows := b.BufBytes / (b.RowH * plan.MMA.EB)
					for _, df := range b.DF {
						if last := df + GEMMThreads/b.PerRow - 1; last >= rows || rows < plan.TileN {
							t.Errorf("B's copy rows %d..%d past its buffer's %d rows (tile %d)", df, last, rows, plan.TileN)
						}
					}
				}
				res := checkKernel(t, k, inputsFor(g, 11, 1), false)
				if res == nil {
					return
				}
				q := plan.MMA
				m, kk := c.n*ohw*ohw, c.c/c.groups*c.k*c.k
				mPad, kPad := ceilDiv(m, GEMMTileM)*GEMMTileM, ceilDiv(kk, q.BK)*q.BK
				perMMA := int64(16 * 8 * q.KStep)
				want := int64(c.groups*mPad*ceilDiv(nPer, tileN)*tileN*kPad) / perMMA
				issued := res.stats.Classes[sim.ClassTensor]
				if issued != want {
					t.Errorf("%d mma issued, want %d (a %d×%d tile over M=%d, N=%d, K=%d, %d groups)", issued, want, GEMMTileM, tileN, m, nPer, kk, c.groups)
				}
				useful := int64(c.groups * m * nPer * kk)
				share := float64(useful) / float64(issued*perMMA)
				// The share of the tile's columns, rows and k past the padding they add.
				colShare := share * float64(mPad) / float64(m) * float64(kPad) / float64(kk)
				if colShare < float64(nPer)/float64(tileN)-1e-9 {
					t.Errorf("useful share of the mma columns %.3f < N/TileN = %d/%d", colShare, nPer, tileN)
				}
				if res.stats.SharedBankConflicts != 0 {
					t.Errorf("%d shared bank conflicts", res.stats.SharedBankConflicts)
				}
				for arch, n := range res.regs {
					if n > 128 {
						t.Errorf("%s: %d registers (over 128 halves the occupancy)", arch, n)
					}
				}
				t.Logf("%s: tile %d×%d, %d mma, useful share %.1f%% (columns %.1f%%), %d warp instructions, registers sm_80 %d sm_90 %d",
					name, GEMMTileM, tileN, issued, 100*share, 100*colShare, res.stats.WarpInsts, res.regs["sm_80"], res.regs["sm_90"])
			})
		}
	}
}
