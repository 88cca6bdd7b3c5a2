package nvvm

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// attnGradCases are codegen/ptx's backward table: masks, grouped and multi-query KV heads,
// B·H > 1, head dims 8 to 128, L and S not multiples of the tiles, E ≠ Ev, a bias broadcast
// over batch or heads, zero-size L and S, and f16/bf16 operands.
var attnGradCases = []attnCase{
	{1, 1, 1, 5, 7, 8, 8, ops.MaskNone, nil, nil, ir.F32},
	{2, 2, 2, 9, 9, 64, 64, ops.MaskCausal, nil, nil, ir.F32},
	{1, 4, 2, 6, 40, 80, 80, ops.MaskNone, nil, nil, ir.F32},
	{2, 4, 1, 37, 37, 96, 96, ops.MaskCausal, nil, nil, ir.F32},
	{1, 2, 2, 5, 13, 128, 128, ops.MaskNone, nil, nil, ir.F32},
	{1, 2, 1, 35, 35, 64, 64, ops.MaskCausal, nil, nil, ir.F32},
	{2, 2, 2, 4, 6, 8, 8, ops.MaskNone, []int{2, 1, 4, 6}, nil, ir.F32},
	{1, 2, 1, 5, 5, 8, 4, ops.MaskCausal, []int{1, 2, 5, 5}, nil, ir.F32},
	{1, 2, 2, 0, 6, 8, 8, ops.MaskNone, nil, nil, ir.F32},
	{1, 2, 2, 5, 0, 8, 8, ops.MaskNone, nil, nil, ir.F32},
	{2, 4, 2, 7, 33, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
	{1, 2, 1, 6, 10, 128, 128, ops.MaskCausal, []int{1, 1, 6, 10}, nil, ir.BF16},
}

// attnGradGraph is one attention_grad op (with respect to wrt, reading the lse input) over
// inputs q, k, v[, bias], o, do and lse, shaped as the case's attention; wrt "kv" is two, dk and
// dv, which one kernel computes.
func attnGradGraph(t *testing.T, c attnCase, wrt string) *ir.Graph {
	t.Helper()
	att := c.graph(t).Outputs[0].Value
	g := ir.NewGraph("attn_grad")
	var args []*ir.Value
	for _, a := range att.Args {
		args = append(args, g.Input(a.Name, a.Type, nil))
	}
	args = append(args, g.Input("o", att.Type, nil), g.Input("do", att.Type, nil), g.Input("lse", ir.T(ir.F32, c.b, c.h, c.l), nil))
	ts := make([]ir.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type
	}
	wrts := []string{wrt}
	if wrt == "kv" {
		wrts = []string{"k", "v"}
	}
	for _, wrt := range wrts {
		attrs := att.Attrs.Clone()
		attrs["wrt"], attrs["lse"] = wrt, true
		ty, err := ops.Infer(ops.AttentionGradOp, ts, attrs)
		if err != nil {
			t.Fatal(err)
		}
		g.SetOutput("d"+wrt, g.Add(ops.AttentionGradOp, ty, attrs, args...))
	}
	return g
}

// attnGradInputs are the backward's inputs: random q, k, v, bias and do, and the o and lse the
// reference's forward computes from them.
func attnGradInputs(t *testing.T, g *ir.Graph, seed uint64) map[string]*tensor.Tensor {
	t.Helper()
	in := inputsFor(g, seed)
	forwardOf(t, g, in)
	return in
}

// forwardOf sets in's o and lse to what the reference's forward computes from in's q, k, v and
// bias, for backward kernel graph g.
func forwardOf(t *testing.T, g *ir.Graph, in map[string]*tensor.Tensor) {
	t.Helper()
	op := g.Outputs[0].Value
	fwd := op.Args[:len(op.Args)-3]
	args := make([]*tensor.Tensor, len(fwd))
	for i, a := range fwd {
		args[i] = in[a.Name]
	}
	attrs := op.Attrs.Clone()
	delete(attrs, "wrt")
	delete(attrs, "lse")
	for _, c := range []struct {
		op   string
		name string
		t    ir.Type
	}{{ops.AttentionOp, "o", op.Args[len(op.Args)-3].Type}, {ops.AttentionLSEOp, "lse", op.Args[len(op.Args)-1].Type}} {
		x, err := ops.Eval(&ir.Value{Op: c.op, Attrs: attrs, Type: c.t}, args)
		if err != nil {
			t.Fatal(err)
		}
		in[c.name] = x
	}
}

// lseGraph is c's attention op's attention_lse, with the attention op itself as a second output
// when forward is set (the forward template then writes both).
func lseGraph(t *testing.T, c attnCase, forward bool) *ir.Graph {
	t.Helper()
	g := c.graph(t)
	att := g.Outputs[0].Value
	ts := make([]ir.Type, len(att.Args))
	for i, a := range att.Args {
		ts[i] = a.Type
	}
	ty, err := ops.Infer(ops.AttentionLSEOp, ts, att.Attrs)
	if err != nil {
		t.Fatal(err)
	}
	lse := g.Add(ops.AttentionLSEOp, ty, att.Attrs.Clone(), att.Args...)
	if !forward {
		g.Outputs = nil
	}
	g.SetOutput("lse", lse)
	return g
}

// checkOwnBackward compiles backward kernel k with p: the entry must be the NVVM producer's own
// (libNVVM compiles it) and assemble for sm_80 and sm_90 without spills; every output must be
// within tol·(1 + the output's largest element) of the reference (-inf where it is) and bit for
// bit codegen/ptx's entry's, whose launch it shares.
func checkOwnBackward(t *testing.T, p *Producer, k plan.Kernel, in map[string]*tensor.Tensor, tol map[ir.DType]float64) string {
	t.Helper()
	text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if launches[0].Producer == "ptx" {
		t.Fatalf("codegen/ptx's entry, want the NVVM producer's own (notes %q)", launches[0].Notes)
	}
	assemble(t, text, []plan.Kernel{k})
	got, _ := run(t, text, k, launches[0], in)
	want, err := ref.Run(k.Graph, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	emitted := runPTX(t, k, plan.Target{SM: 80}, launches[0], in)
	for _, o := range k.Graph.Outputs {
		checkWithin(t, o.Name, got[o.Name], want[o.Name], tol)
		if string(got[o.Name].Bytes()) != string(emitted[o.Name].Bytes()) {
			t.Errorf("%s differs from codegen/ptx's", o.Name)
		}
	}
	return text
}

// checkWithin fails the test unless g is within tol·(1 + w's largest element) of w, -inf and NaN
// where w is.
func checkWithin(t *testing.T, name string, g, w *tensor.Tensor, tol map[ir.DType]float64) {
	t.Helper()
	scale := 0.0
	for _, x := range w.F {
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			scale = max(scale, math.Abs(x))
		}
	}
	bad := 0
	for i, x := range w.F {
		if y := g.F[i]; !(math.Abs(y-x) <= tol[w.Type.DType]*(1+scale) || y == x || math.IsNaN(x) && math.IsNaN(y)) && bad < 5 {
			t.Errorf("%s[%d] = %g, want %g", name, i, y, x)
			bad++
		}
	}
}

// gradTolerance is codegen/ptx's bound on a gradient: f32 arithmetic, ex2.approx and lg2.approx
// against float64 over sums of up to L·H/KVH terms, plus the result's own rounding, relative to
// the gradient's largest element.
var gradTolerance = map[ir.DType]float64{ir.F32: 5e-5, ir.F16: 4e-3, ir.BF16: 2e-2}

// TestAttentionGradKernel runs codegen/ptx's dq, dk and dv table through the NVVM producer: its
// own entries, within codegen/ptx's tolerance of the float64 reference of attention_grad (which
// recomputes the softmax instead of reading lse) and bit for bit codegen/ptx's; dk and dv where
// attnmma.FitsGradWide holds and dq where FitsGradDQ does on its tensor-core templates
// (attention_bwd_mma.go, attention_bwd_dq_mma.go), as codegen/ptx's.
func TestAttentionGradKernel(t *testing.T) {
	p := requireProducer(t)
	for _, c := range attnGradCases {
		for _, wrt := range []string{"q", "k", "v", "kv"} {
			t.Run(c.String()+"_d"+wrt, func(t *testing.T) {
				g := attnGradGraph(t, c, wrt)
				op := g.Outputs[0].Value
				text := checkOwnBackward(t, p, plan.Kernel{Name: "k0_attention_grad", Graph: g}, attnGradInputs(t, g, 7), gradTolerance)
				want := "shfl.sync.bfly" // the CUDA-core templates' warp butterfly
				if attnmma.FitsGradWide(op) || attnmma.FitsGradDQ(op) {
					want = "mma.sync" // dk and dv, or dq, on tensor cores
				}
				if c.l > 0 && c.s > 0 && !strings.Contains(text, want) { // libNVVM drops a loop of no rows
					t.Errorf("want %s", want)
				}
			})
		}
	}
}

// TestAttentionLSEKernel: the NVVM producer writes the rows' log-sum-exp as the reference computes
// it, without value columns (attention_lse alone) and beside the attention's result (which the
// CUDA-core forward template writes too; the tensor-core one's: TestAttentionMMALSE), bit for
// bit codegen/ptx's.
func TestAttentionLSEKernel(t *testing.T) {
	p := requireProducer(t)
	tol := map[ir.DType]float64{ir.F32: 2e-5, ir.F16: 2e-3, ir.BF16: 1e-2}
	for _, c := range attnGradCases {
		for _, forward := range []bool{false, true} {
			att := c.graph(t).Outputs[0].Value
			if _, decode := splitkv.Of(att); forward && decode {
				continue // the split-KV template does not write it
			}
			t.Run(fmt.Sprintf("%s_forward%v", c, forward), func(t *testing.T) {
				g := lseGraph(t, c, forward)
				text := checkOwnBackward(t, p, plan.Kernel{Name: "k0_attention_lse", Graph: g}, inputsFor(g, 5), tol)
				if !plan.EmptyOutputs(g) && !strings.Contains(text, "lg2.approx.f32") {
					t.Error("no lg2.approx.f32 in the kernel")
				}
			})
		}
	}
}

// TestAttentionGradRefusals: the NVVM producer's backward templates refuse by name what they do
// not compute, as codegen/ptx's.
func TestAttentionGradRefusals(t *testing.T) {
	p := requireProducer(t)
	for _, tc := range []struct {
		c    attnCase
		wrt  string
		want string
	}{
		{attnCase{1, 2, 2, 5, 6, 8, 8, ops.MaskNone, []int{1, 2, 5, 6}, nil, ir.F32}, "bias", "attention_grad with respect to bias is not supported"},
		{attnCase{1, 2, 2, 5, 6, 8, 8, ops.MaskPosition, nil, nil, ir.F32}, "q", "the position mask is not supported"},
		{attnCase{1, 2, 2, 5, 6, 160, 8, ops.MaskNone, nil, nil, ir.F32}, "k", "head dims 160 and 8, the backward templates take at most 128"},
	} {
		t.Run(tc.c.String()+"_d"+tc.wrt, func(t *testing.T) {
			g := lseGraph(t, tc.c, true)
			if tc.wrt != "" {
				g = attnGradGraph(t, tc.c, tc.wrt)
			}
			_, _, err := p.Module([]plan.Kernel{{Name: "k0", Graph: g}}, plan.Target{SM: 80})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
