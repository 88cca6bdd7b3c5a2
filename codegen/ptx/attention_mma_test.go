package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
)

// TestAttentionMMA runs the tensor-core template on the simulator (memcheck, racecheck and
// barrier checks on; ptxas sm_80 and sm_90 without spills) against the reference: f16 and bf16,
// head dims 64, 80, 96 and 128, multi-head, grouped and multi-query KV heads, L and S multiples
// of the 64-row and 64-key tiles and not, L ≠ S under a position mask (rows that see no key
// are NaN), additive bias broadcast over batch or heads.
func TestAttentionMMA(t *testing.T) {
	for _, c := range []struct {
		b, h, kvh, l, s, e, ev int
		mask                   string
		bias                   []int
		pos                    []int64
		d                      ir.DType
	}{
		{1, 1, 1, 64, 64, 64, 64, ops.MaskNone, nil, nil, ir.F16},
		{1, 2, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
		{2, 4, 2, 33, 100, 80, 80, ops.MaskNone, nil, nil, ir.F16},
		{1, 3, 1, 130, 130, 96, 96, ops.MaskCausal, nil, nil, ir.BF16},
		{1, 2, 1, 20, 64, 128, 128, ops.MaskCausal, nil, nil, ir.BF16},
		{2, 2, 1, 16, 90, 64, 64, ops.MaskPosition, nil, []int64{70, -20}, ir.F16},
		{1, 2, 2, 24, 150, 128, 64, ops.MaskPosition, nil, []int64{100}, ir.BF16},
		{2, 2, 2, 40, 72, 64, 64, ops.MaskNone, []int{2, 1, 40, 72}, nil, ir.F16},
		{1, 4, 2, 65, 65, 80, 80, ops.MaskCausal, []int{1, 4, 65, 65}, nil, ir.BF16},
		{1, 2, 1, 18, 40, 96, 96, ops.MaskPosition, []int{1, 2, 18, 40}, []int64{15}, ir.F16},
	} {
		name := fmt.Sprintf("%s_B%d_H%d_KVH%d_L%d_S%d_E%d_Ev%d_%s_bias%v", c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := attentionGraph(t, c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias)
			in := inputsFor(g, 3, 1)
			if c.pos != nil {
				copy(in["pos"].I, c.pos)
			}
			res := runKernel(t, Kernel{Name: "k0_attention", Graph: g}, in)
			want, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkAttention(t, res.out["o"], want["o"])
			for _, s := range []string{"mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned.m8n8.x4.trans", "cp.async"} {
				if !strings.Contains(res.ptx, s) {
					t.Errorf("the kernel has no %s", s)
				}
			}
			t.Logf("registers %v", res.regs)
		})
	}
}
