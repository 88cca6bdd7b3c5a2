package passes

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
)

// TestGEMVCost: a contraction of at most gemv.MaxM rows is costed as codegen launches it, the
// GEMV plan's blocks (and a split's partials in its bytes); more rows keep the 128×128 tiles.
func TestGEMVCost(t *testing.T) {
	cases := []struct {
		m, n, k     int
		blocks      int
		partialsF32 int64
	}{
		{1, 768, 3072, 24 * 10, 24 * 10 * 32},         // GPT-2's MLP down projection: K split 10 ways
		{8, 50257, 768, 1571, 0},                      // the LM head: columns alone fill the GPU
		{9, 768, 3072, 6, 0},                          // more rows: the tiled templates
		{128, 768, 3072, 6, 0},                        //
		{4, 768, 768, 24 * 6, 24 * 6 * 4 * gemv.Cols}, // four rows, a short K
	}
	for _, c := range cases {
		src := fmt.Sprintf("graph g {\n  input %%x : f32[%[1]d,%[3]d]\n  input %%w : f32[%[3]d,%[2]d]\n"+
			"  %%0 = dot_general(%%x, %%w) {lhs_contract=[1], rhs_contract=[0]} : f32[%[1]d,%[2]d]\n  output y = %%0\n}\n", c.m, c.n, c.k)
		g, err := ir.Parse("g.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		out := &Buffer{Name: "y", Kind: OutputBuffer, Type: g.Outputs[0].Value.Type}
		k := &Kernel{Name: "k", Kind: Contraction, Body: g, Space: g.Outputs[0].Value.Type.Shape, Writes: []*Buffer{out}}
		ks := kernelCost(k, false)
		if ks.Blocks != c.blocks {
			t.Errorf("%d×%d·%d×%d: %d blocks, want %d", c.m, c.k, c.k, c.n, ks.Blocks, c.blocks)
		}
		wantRead := 4*int64(c.m*c.k+c.k*c.n) + 4*c.partialsF32
		wantWrite := 4*int64(c.m*c.n) + 8*c.partialsF32
		if ks.ReadBytes != wantRead || ks.WriteBytes != wantWrite {
			t.Errorf("%d×%d·%d×%d: read %d written %d bytes, want %d and %d", c.m, c.k, c.k, c.n, ks.ReadBytes, ks.WriteBytes, wantRead, wantWrite)
		}
	}
}
