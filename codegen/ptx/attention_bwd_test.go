package ptx

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// attnGradCases are the backward templates' table: masks, grouped and multi-query KV heads,
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
	{2, 4, 2, 7, 33, 80, 80, ops.MaskCausal, nil, nil, ir.F16},                // on tensor cores (attnmma.GradTakes), as the next
	{1, 2, 2, 9, 20, 128, 128, ops.MaskNone, []int{1, 2, 9, 20}, nil, ir.F16}, // dk and dv: a bias at E = 128 keeps the CUDA-core template
	{1, 2, 1, 6, 10, 128, 128, ops.MaskCausal, []int{1, 1, 6, 10}, nil, ir.BF16},
}

// attnGradGraph is one attention_grad op (with respect to wrt, reading the lse input) over
// inputs q, k, v[, bias], o, do and lse, shaped as attentionGraph's attention; wrt "kv" is two,
// dk and dv, which one kernel computes.
func attnGradGraph(t *testing.T, c attnCase, wrt string) *ir.Graph {
	t.Helper()
	fwd := attentionGraph(t, c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias)
	att := fwd.Outputs[0].Value
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
	in := inputsFor(g, seed, 1)
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
	return in
}

// TestAttentionGradKernel runs the dq, dk and dv templates on the simulator (memcheck,
// racecheck, barrier checks; ptxas sm_80 and sm_90 without spills) against the float64
// reference of attention_grad, which recomputes the softmax instead of reading lse.
func TestAttentionGradKernel(t *testing.T) {
	for _, c := range attnGradCases {
		for _, wrt := range []string{"q", "k", "v", "kv"} {
			t.Run(c.String()+"_d"+wrt, func(t *testing.T) {
				t.Parallel()
				g, res := runGrad(t, c, wrt)
				_, mma := attnmma.GradTakes(g.Outputs[0].Value) // the tensor-core templates' own tests
				if g.Outputs[0].Value.Type.Shape.NumElements() > 0 && !mma && !strings.Contains(res.ptx, "shfl.sync.bfly") {
					t.Errorf("want the warp butterfly:\n%s", res.ptx)
				}
			})
		}
	}
}

// runGrad runs c's attention_grad kernel (wrt as attnGradGraph's) on the simulator and checks
// its gradients against the float64 reference's.
func runGrad(t *testing.T, c attnCase, wrt string) (*ir.Graph, *result) {
	t.Helper()
	g := attnGradGraph(t, c, wrt)
	in := attnGradInputs(t, g, 7)
	res := runKernel(t, Kernel{Name: "k0_attention_grad", Graph: g}, in)
	want, err := ref.Run(g, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range g.Outputs {
		checkGrad(t, res.out[o.Name], want[o.Name])
	}
	t.Logf("registers %v", res.regs)
	return g, res
}

// checkGrad compares a gradient with the reference's: f32 arithmetic, ex2.approx and lg2.approx
// against float64 over sums of up to L·H/KVH terms, plus the result's own rounding.
func checkGrad(t *testing.T, got, want *tensor.Tensor) {
	t.Helper()
	tol := map[ir.DType]float64{ir.F32: 5e-5, ir.F16: 4e-3, ir.BF16: 2e-2}[want.Type.DType]
	scale := 0.0 // errors are relative to the gradient's largest element
	for _, w := range want.F {
		scale = max(scale, math.Abs(w))
	}
	bad := 0
	for i, w := range want.F {
		if g := got.F[i]; !(math.Abs(g-w) <= tol*(1+scale)) {
			if bad < 5 {
				t.Errorf("[%d] = %g, want %g (tolerance %g)", i, g, w, tol*(1+scale))
			}
			bad++
		}
	}
}

// lseGraph is c's attention op's attention_lse, with the attention op itself as a second output
// when forward is set (the forward template then writes both).
func lseGraph(t *testing.T, c attnCase, forward bool) *ir.Graph {
	t.Helper()
	g := attentionGraph(t, c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias)
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

// TestAttentionLSEKernel: the forward template writes the rows' log-sum-exp as the reference
// computes it, without value columns (attention_lse alone) and beside the attention's result
// (which stays as without it).
func TestAttentionLSEKernel(t *testing.T) {
	for _, c := range attnGradCases {
		for _, forward := range []bool{false, true} {
			att := attentionGraph(t, c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias).Outputs[0].Value
			if _, decode := splitkv.Of(att); forward && decode {
				continue // the split-KV template writes no LSE (TestAttentionGradRefusals)
			}
			t.Run(fmt.Sprintf("%s_forward%v", c, forward), func(t *testing.T) {
				t.Parallel()
				g := lseGraph(t, c, forward)
				in := inputsFor(g, 5, 1)
				res := runKernel(t, Kernel{Name: "k0_attention_lse", Graph: g}, in)
				want, err := ref.Run(g, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				for i, w := range want["lse"].F {
					if g := res.out["lse"].F[i]; !(math.Abs(g-w) <= 2e-5*(1+math.Abs(w)) || math.IsInf(w, -1) && g == w) {
						t.Errorf("lse[%d] = %g, want %g", i, g, w)
					}
				}
				if forward {
					checkAttention(t, res.out["o"], want["o"])
				}
			})
		}
	}
}

// TestAttentionLSEForwardOnly: a forward kernel without attention_lse is the forward template's
// text alone (no lg2), and one with it differs by the rows' store.
func TestAttentionLSEForwardOnly(t *testing.T) {
	c := attnGradCases[1]
	plain, _, err := Generate(Kernel{Name: "k0", Graph: attentionGraph(t, c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias)}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	with, _, err := Generate(Kernel{Name: "k0", Graph: lseGraph(t, c, true)}, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "lg2.approx") || !strings.Contains(with, "lg2.approx") {
		t.Errorf("lg2.approx in the plain forward %v, in the forward with LSE %v", strings.Contains(plain, "lg2.approx"), strings.Contains(with, "lg2.approx"))
	}
}

// TestAttentionGradRefusals: the backward templates refuse by name what they do not compute.
func TestAttentionGradRefusals(t *testing.T) {
	for _, tc := range []struct {
		c    attnCase
		wrt  string
		want string
	}{
		{attnCase{1, 2, 2, 5, 6, 8, 8, ops.MaskNone, []int{1, 2, 5, 6}, nil, ir.F32}, "bias", "attention_grad with respect to bias is not supported"},
		{attnCase{1, 2, 2, 5, 6, 8, 8, ops.MaskPosition, nil, nil, ir.F32}, "q", "the position mask is not supported"},
		{attnCase{1, 2, 2, 5, 6, 160, 8, ops.MaskNone, nil, nil, ir.F32}, "k", "head dims 160 and 8, the backward templates take at most 128"},
		{attnCase{1, 4, 1, 1, 300, 64, 64, ops.MaskNone, nil, nil, ir.F16}, "", "the split-KV attention template does not write the log-sum-exp"},
	} {
		t.Run(tc.c.String()+"_d"+tc.wrt, func(t *testing.T) {
			g := lseGraph(t, tc.c, true)
			if tc.wrt != "" {
				g = attnGradGraph(t, tc.c, tc.wrt)
			}
			_, _, err := Generate(Kernel{Name: "k0", Graph: g}, Target{SM: 80})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
