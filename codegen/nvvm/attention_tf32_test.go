package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestAttentionTF32Borrowed: under Target.TF32 f32 attention of the tensor-core template's shapes
// takes codegen/ptx's tf32 tensor-core entry, and the launch says so; without tf32, and for
// shapes the template refuses, the NVVM producer writes its own CUDA-core entry.
func TestAttentionTF32Borrowed(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		attnCase
		tf32, borrowed bool
	}{
		{attnCase{1, 2, 1, 64, 40, 64, 64, ops.MaskCausal, nil, nil, ir.F32}, true, true},
		{attnCase{1, 2, 1, 64, 40, 64, 64, ops.MaskCausal, nil, nil, ir.F32}, false, false},
		{attnCase{1, 2, 1, 64, 40, 72, 72, ops.MaskCausal, nil, nil, ir.F32}, true, false},
	} {
		k := plan.Kernel{Name: "k0_attention", Graph: c.graph(t)}
		text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80, TF32: c.tf32})
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(launches[0].Notes, "\n")
		if got := launches[0].Producer == "ptx"; got != c.borrowed {
			t.Errorf("%s tf32 %v: codegen/ptx's entry %v, want %v (notes %q)", c, c.tf32, got, c.borrowed, notes)
		}
		if c.borrowed && (!strings.Contains(notes, "no tf32 tensor-core attention template") || !strings.Contains(text, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")) {
			t.Errorf("%s: notes %q, or no tf32 mma in the entry", c, notes)
		}
	}
}
