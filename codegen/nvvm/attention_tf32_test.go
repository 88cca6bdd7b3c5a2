package nvvm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// TestAttentionTF32Borrowed: under Target.TF32 f32 attention of the tensor-core template's shapes
// is refused, Lacks naming codegen/ptx's tf32 tensor-core template (codegen/backend's nvvm
// producer takes its entry: TestFallback); without tf32, and for shapes the template refuses,
// the NVVM producer writes its own CUDA-core entry.
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
		tg := plan.Target{SM: 80, TF32: c.tf32}
		note, lacks := Lacks(k, tg)
		if lacks != c.borrowed || c.borrowed && !strings.Contains(note, "no tf32 tensor-core attention template") {
			t.Errorf("%s tf32 %v: Lacks = %q, %v; want %v", c, c.tf32, note, lacks, c.borrowed)
		}
		_, launches, err := p.Module([]plan.Kernel{k}, tg)
		if c.borrowed {
			if !Refused(err) {
				t.Errorf("%s tf32 %v: Module: %v, want a refusal", c, c.tf32, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if launches[0].Producer == "ptx" {
			t.Errorf("%s tf32 %v: codegen/ptx's entry (notes %q), want the NVVM producer's own", c, c.tf32, launches[0].Notes)
		}
	}
}
