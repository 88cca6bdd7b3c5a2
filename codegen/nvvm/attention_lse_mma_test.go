package nvvm

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// attnMMALSECases are codegen/ptx's TestAttentionMMALSE table: its tensor-core cases (f16, bf16)
// and its tf32 ones (f32 under Target.TF32), each attention writing its rows' log-sum-exp.
var attnMMALSECases = []attnCase{
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
	{1, 1, 1, 64, 64, 64, 64, ops.MaskNone, nil, nil, ir.F32},
	{1, 2, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F32},
	{2, 4, 2, 33, 100, 80, 80, ops.MaskNone, nil, nil, ir.F32},
	{1, 3, 1, 130, 130, 96, 96, ops.MaskCausal, nil, nil, ir.F32},
	{1, 2, 1, 20, 45, 128, 128, ops.MaskCausal, nil, nil, ir.F32},
	{1, 2, 2, 24, 50, 128, 64, ops.MaskPosition, nil, []int64{30}, ir.F32},
	{2, 2, 1, 16, 40, 64, 64, ops.MaskPosition, nil, []int64{30, -20}, ir.F32},
	{1, 4, 2, 65, 65, 80, 80, ops.MaskCausal, []int{1, 4, 65, 65}, nil, ir.F32},
}

// TestAttentionMMALSE runs codegen/ptx's TestAttentionMMALSE table through the NVVM producer's
// own tensor-core template writing attention's result and its rows' log-sum-exp (f16/bf16, and
// f32 on tf32 tensor cores under Target.TF32): head dims 64 to 128, Ev < E, causal and position
// masks with rows that see no key (−inf), grouped and multi-query KV heads, ragged L and S,
// additive bias, the outputs in either order (swap). Both outputs are bit for bit codegen/ptx's
// (checkOwnLSE: ptxas sm_80 and sm_90 without spills, the simulator's memcheck and racecheck),
// the LSE within codegen/ptx's bound of ops' float64 attention_lse, o within the forward's.
func TestAttentionMMALSE(t *testing.T) {
	p := requireProducer(t)
	type lseCase struct {
		attnCase
		swap bool
	}
	var cases []lseCase
	for _, c := range attnMMALSECases {
		cases = append(cases, lseCase{c, false})
	}
	cases = append(cases, lseCase{attnMMALSECases[1], true}, lseCase{attnMMALSECases[15], true})
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s_swap%v", c.attnCase, c.swap), func(t *testing.T) {
			g := lseGraph(t, c.attnCase, true)
			if c.swap {
				slices.Reverse(g.Outputs)
			}
			checkOwnLSE(t, p, g, c.pos)
		})
	}
}

// TestAttentionMMALSEScale: codegen/ptx's scale cases, the LSE of scales the template does not
// fold into the exponent (zero, negative, so small that the bias's 1/scale would overflow) and
// of a folded one, bit for bit codegen/ptx's.
func TestAttentionMMALSEScale(t *testing.T) {
	p := requireProducer(t)
	for _, scale := range []float64{-0.2, 0, 1e-39, 0.5} {
		c := attnCase{1, 2, 2, 30, 70, 64, 64, ops.MaskCausal, []int{1, 1, 30, 70}, nil, ir.F16}
		t.Run(fmt.Sprintf("scale%g", scale), func(t *testing.T) {
			g := lseGraph(t, c, true)
			for _, o := range g.Outputs {
				o.Value.Attrs["scale"] = scale
			}
			checkOwnLSE(t, p, g, nil)
		})
	}
}

// checkOwnLSE compiles attention graph g (outputs o and lse) with p, f32 under Target.TF32: the
// entry must be the producer's own tensor-core one (mma.sync, lg2.approx), assemble for sm_80
// and sm_90 without spills, match the reference (the LSE within codegen/ptx's lseTolerance, −inf
// exactly where a row sees no key; o within the forward's bound) and codegen/ptx's entry bit for
// bit, with its launch. pos, if set, is the position mask's positions.
func checkOwnLSE(t *testing.T, p *Producer, g *ir.Graph, pos []int64) {
	t.Helper()
	var att *ir.Value
	for _, o := range g.Outputs {
		if o.Value.Op == ops.AttentionOp {
			att = o.Value
		}
	}
	tg := plan.Target{SM: 80, TF32: att.Type.DType == ir.F32}
	if !attnmma.Takes(att, tg.TF32) {
		t.Fatal("not the tensor-core template's")
	}
	in := inputsFor(g, 3)
	if pos != nil {
		copy(in["pos"].I, pos)
	}
	k := plan.Kernel{Name: "k0_attention", Graph: g}
	text, launches, err := p.Module([]plan.Kernel{k}, tg)
	if err != nil {
		t.Fatal(err)
	}
	if launches[0].Producer == "ptx" {
		t.Fatalf("codegen/ptx's entry, want the NVVM producer's own (notes %q)", launches[0].Notes)
	}
	for _, s := range []string{"mma.sync", "lg2.approx.f32"} {
		if !strings.Contains(text, s) {
			t.Errorf("the kernel has no %s", s)
		}
	}
	regs := assemble(t, text, []plan.Kernel{k})
	t.Logf("registers %v", regs[k.Name])
	got, _ := run(t, text, k, launches[0], in)
	want, err := ref.Run(g, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkLSE(t, got["lse"], want["lse"], tg.TF32)
	if tg.TF32 {
		rel, _ := tolerance.Tolerance(ir.F32, true, 0)
		checkAttentionWithin(t, got["o"], want["o"], rel)
	} else {
		checkAttention(t, got["o"], want["o"])
	}
	emitted := runPTX(t, k, tg, launches[0], in)
	for _, o := range g.Outputs {
		if string(got[o.Name].Bytes()) != string(emitted[o.Name].Bytes()) {
			t.Errorf("%s differs from codegen/ptx's", o.Name)
		}
	}
}

// checkLSE compares log-sum-exp rows with the reference's within codegen/ptx's bound: f32 sums
// of exact 16-bit products, ex2.approx and lg2.approx against float64, 2e-5·(1 + |w|); under
// tf32 (q and k rounded to 10-bit mantissas move every score, and the LSE with them) tf32's
// relative bound·(1 + |w|). −inf exactly where a row sees no key.
func checkLSE(t *testing.T, got, want *tensor.Tensor, tf32 bool) {
	t.Helper()
	tol := 2e-5
	if tf32 {
		tol, _ = tolerance.Tolerance(ir.F32, true, 0)
	}
	bad := 0
	for i, w := range want.F {
		g := got.F[i]
		if math.IsInf(w, -1) && g == w || math.Abs(g-w) <= tol*(1+math.Abs(w)) {
			continue
		}
		if bad < 5 {
			t.Errorf("lse[%d] = %g, want %g", i, g, w)
		}
		bad++
	}
}
