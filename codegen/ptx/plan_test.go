package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// ReducePlan asked about a kernel without a reduction (the NVVM producer's auto rule asks about
// every kernel it takes) is an error, not an index out of range.
func TestReducePlanWithoutReduction(t *testing.T) {
	for _, src := range []string{
		`graph k { input %x : f32[4,8]  %0 = relu(%x) : f32[4,8]  output y = %0 }`,
		`graph k { input %a : f32[4,8]  input %b : f32[8,3]  %0 = dot_general(%a, %b) {lhs_contract=[1], rhs_contract=[0]} : f32[4,3]  output y = %0 }`,
	} {
		g, err := ir.Parse("k.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ReducePlan(Kernel{Name: "k0", Graph: g}); err == nil || !strings.Contains(err.Error(), "no reduction to plan") {
			t.Errorf("%s: err = %v, want no reduction to plan", src, err)
		}
	}
}

// The FFMA template's tile is as wide as a conv2d's output channels per group need (16, 32, 64
// or 128 columns), and so is the tensor-core template's (8 warps of 16 rows × 16, 32 or 64
// columns), so a narrow convolution's multiply-adds and mma do not run on padding columns; wide
// convolutions and dots keep 128 columns. The grid covers N with the tile.
func TestGEMMPlanTileWidth(t *testing.T) {
	conv := func(dt string, o, groups int) string {
		return strings.NewReplacer("DT", dt, "O", fmt.Sprint(o), "CG", fmt.Sprint(8/groups), "G", fmt.Sprint(groups)).Replace(`graph k {
  input %x : DT[2,8,12,12]
  param %w : DT[O,CG,3,3]
  %0 = conv2d(%x, %w) {padding=[1,1], groups=G} : DT[2,O,12,12]
  output y = %0
}`)
	}
	dot := func(n int) string {
		return fmt.Sprintf(`graph k {
  input %%a : f32[64,32]
  param %%b : f32[32,%d]
  %%0 = dot_general(%%a, %%b) {lhs_contract=[1], rhs_contract=[0]} : f32[64,%d]
  output y = %%0
}`, n, n)
	}
	cases := []struct {
		name, src     string
		tileN, grid0  int
		colRegs, kind string
	}{
		{"conv_o1", conv("f32", 1, 1), 16, 1, "1", "ffma"},
		{"conv_o16", conv("f32", 16, 1), 16, 1, "1", "ffma"},
		{"conv_o17", conv("f32", 17, 1), 32, 1, "2", "ffma"},
		{"conv_o64", conv("f32", 64, 1), 64, 1, "4", "ffma"},
		{"conv_o65", conv("f32", 65, 1), 128, 1, "8", "ffma"},
		{"conv_o300", conv("f32", 300, 1), 128, 3, "8", "ffma"},
		{"conv_o32_groups2", conv("f32", 32, 2), 16, 1, "1", "ffma"},
		{"conv_o16_f16", conv("f16", 16, 1), 16, 1, "1", "tensor core"},
		{"conv_o3_bf16", conv("bf16", 3, 1), 16, 1, "1", "tensor core"},
		{"conv_o24_f16", conv("f16", 24, 1), 32, 1, "2", "tensor core"},
		{"conv_o64_bf16", conv("bf16", 64, 1), 64, 1, "4", "tensor core"},
		{"conv_o65_f16", conv("f16", 65, 1), 128, 1, "8", "tensor core"},
		{"conv_o300_f16", conv("f16", 300, 1), 128, 3, "8", "tensor core"},
		{"dot_n16", dot(16), 128, 1, "8", "ffma"},
	}
	for _, c := range cases {
		g, err := ir.Parse("k.gir", []byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		p, err := GEMMPlan(Kernel{Name: "k0", Graph: g}, Target{SM: 80})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		kind := "ffma"
		if p.MMA != nil {
			kind = "tensor core"
		}
		if p.MMA != nil && 8/p.MMA.WarpsN*16*p.MMA.MI != GEMMTileM || p.MMA != nil && p.MMA.WarpsN*8*p.MMA.NI != p.TileN {
			t.Errorf("%s: warps %d wide of %d×%d mma tiles do not cover %d×%d", c.name, p.MMA.WarpsN, p.MMA.MI, p.MMA.NI, GEMMTileM, p.TileN)
		}
		if p.TileN != c.tileN || fmt.Sprint(p.ColRegs) != c.colRegs || p.Grid[0] != c.grid0 || kind != c.kind || p.TileN != 16*p.ColRegs {
			t.Errorf("%s: %s tile %d columns (%d per thread), grid.x %d; want %s, %d (%s), %d",
				c.name, kind, p.TileN, p.ColRegs, p.Grid[0], c.kind, c.tileN, c.colRegs, c.grid0)
		}
	}
}
