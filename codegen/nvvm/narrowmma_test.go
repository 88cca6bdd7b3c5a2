package nvvm

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// The tensor-core template's narrow conv2d tiles (8 warps of 16 rows × 16, 32 or 64 columns,
// plan.GEMMPlan's MMA.WarpsN, MI and NI): a 64-column tile whose staged epilogue goes out in two
// passes of 32 columns, a 32-column one with groups and stride through the fragment epilogue,
// and a pooled 64-column one under tf32. Both producers agree bit for bit and with the
// reference.
func TestNarrowMMATiles(t *testing.T) {
	p := requireProducer(t)
	for _, tc := range []struct {
		name, src string
		tf32      bool
		tileN     int
	}{
		{"conv_f16_o40", `graph g {
  input %x : f16[1,6,8,8]
  input %w : f16[40,6,3,3]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f16[1,40,8,8]
  %1 = relu(%0) : f16[1,40,8,8]
  output y = %1
}`, false, 64},
		{"conv_bf16_o48_g2_s2", `graph g {
  input %x : bf16[2,8,9,9]
  input %w : bf16[48,4,3,3]
  %0 = conv2d(%x, %w) {stride=[2,2], padding=[1,1], groups=2} : bf16[2,48,5,5]
  output y = %0
}`, false, 32},
		{"conv_tf32_o64_maxpool", `graph g {
  input %x : f32[1,3,8,8]
  input %w : f32[64,3,3,3]
  %0 = conv2d(%x, %w) {padding=[1,1]} : f32[1,64,8,8]
  %1 = max_pool2d(%0) {kernel=[2,2], stride=[2,2]} : f32[1,64,4,4]
  output y = %1
}`, true, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ir.Parse(tc.name+".gir", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			target := plan.Target{SM: 80, TF32: tc.tf32}
			k := plan.Kernel{Name: "k_" + tc.name, Graph: g}
			gp, err := plan.GEMMPlan(k, target)
			if err != nil || gp.MMA == nil || gp.TileN != tc.tileN || gp.MMA.WarpsN != 1 {
				t.Fatalf("plan %+v, %v; want a narrow tensor-core tile of %d columns", gp.MMA, err, tc.tileN)
			}
			checkModuleFor(t, p, []plan.Kernel{k}, 7, target)
		})
	}
}
