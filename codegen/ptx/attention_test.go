package ptx

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// attentionGraph is one attention op over inputs q, k, v[, pos][, bias].
func attentionGraph(t *testing.T, d ir.DType, b, h, kvh, l, s, e, ev int, mask string, bias []int) *ir.Graph {
	t.Helper()
	g := ir.NewGraph("attn")
	args := []*ir.Value{g.Input("q", ir.T(d, b, h, l, e), nil), g.Input("k", ir.T(d, b, kvh, s, e), nil), g.Input("v", ir.T(d, b, kvh, s, ev), nil)}
	if mask == ops.MaskPosition {
		args = append(args, g.Input("pos", ir.T(ir.I32, b), nil))
	}
	attrs := ir.Attrs{"scale": 1 / math.Sqrt(float64(e)), "mask": mask}
	if bias != nil {
		args = append(args, g.Input("bias", ir.T(d, bias...), nil))
		attrs["additive"] = true
	}
	ts := make([]ir.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type
	}
	ty, err := ops.Infer(ops.AttentionOp, ts, attrs)
	if err != nil {
		t.Fatal(err)
	}
	g.SetOutput("o", g.Add(ops.AttentionOp, ty, attrs, args...))
	return g
}

// TestAttentionKernel runs the attention template on the simulator (memcheck, racecheck,
// barrier checks on; ptxas sm_80 and sm_90 without spills) against the reference for masks,
// grouped KV heads, head dims, ragged tiles and dtypes.
func TestAttentionKernel(t *testing.T) {
	for _, c := range []attnCase{
		{1, 1, 1, 5, 7, 8, 8, ops.MaskNone, nil, nil, ir.F32},
		{2, 2, 2, 9, 9, 16, 16, ops.MaskCausal, nil, nil, ir.F32},
		{1, 4, 2, 6, 40, 33, 5, ops.MaskCausal, nil, nil, ir.F32},
		{2, 4, 1, 3, 37, 8, 8, ops.MaskPosition, nil, []int64{34, 5}, ir.F32},
		{2, 2, 1, 1, 70, 64, 64, ops.MaskPosition, nil, []int64{69, -1}, ir.F32},
		{2, 2, 2, 4, 6, 8, 8, ops.MaskNone, []int{2, 1, 4, 6}, nil, ir.F32},
		{1, 2, 1, 5, 5, 8, 4, ops.MaskCausal, []int{1, 2, 5, 5}, nil, ir.F32},
		{1, 2, 2, 5, 34, 64, 64, ops.MaskCausal, nil, nil, ir.F32},
		{1, 1, 1, 4, 20, 80, 80, ops.MaskCausal, nil, nil, ir.F32},
		{1, 2, 1, 3, 20, 96, 96, ops.MaskNone, nil, nil, ir.F32},
		{1, 1, 1, 5, 12, 128, 128, ops.MaskCausal, nil, nil, ir.F32},
		{2, 4, 2, 7, 33, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
		{1, 2, 2, 3, 9, 16, 16, ops.MaskPosition, []int{1, 1, 3, 9}, []int64{6}, ir.F16},
		{2, 2, 1, 6, 10, 128, 128, ops.MaskCausal, nil, nil, ir.BF16},
	} {
		t.Run(c.String(), func(t *testing.T) {
			res := c.run(t, nil)
			g := attentionGraph(t, c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias)
			if _, decode := splitkv.Of(g.Outputs[0].Value); !decode && (!strings.Contains(res.ptx, "shfl.sync.bfly") || strings.Count(res.ptx, "bar.sync") != 2) {
				t.Errorf("want the warp butterfly and two barriers per tile:\n%s", res.ptx)
			}
		})
	}
}

// attnCase is one attention op over inputs q, k, v[, pos][, bias] (attentionGraph), pos holding
// the given positions.
type attnCase struct {
	b, h, kvh, l, s, e, ev int
	mask                   string
	bias                   []int
	pos                    []int64
	d                      ir.DType
}

func (c attnCase) String() string {
	return fmt.Sprintf("%s_B%d_H%d_KVH%d_L%d_S%d_E%d_Ev%d_%s_bias%v", c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias)
}

// run runs the case's kernel (its op's attributes overridden by attrs) on the simulator and
// checks it against the reference.
func (c attnCase) run(t *testing.T, attrs ir.Attrs) *result {
	t.Helper()
	g := attentionGraph(t, c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias)
	for k, v := range attrs {
		g.Outputs[0].Value.Attrs[k] = v
	}
	return runAttention(t, g, attnInputs(g, 3, c.pos))
}

// attnInputs are attention graph g's inputs from seed, pos (if given) its positions.
func attnInputs(g *ir.Graph, seed uint64, pos []int64) map[string]*tensor.Tensor {
	in := inputsFor(g, seed, 1)
	if pos != nil {
		copy(in["pos"].I, pos)
	}
	return in
}

// runAttention runs the kernel of attention graph g on the simulator and checks its output
// against the reference's.
func runAttention(t *testing.T, g *ir.Graph, in map[string]*tensor.Tensor) *result {
	t.Helper()
	res := runKernel(t, Kernel{Name: "k0_attention", Graph: g}, in)
	want, err := ref.Run(g, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkAttention(t, res.out["o"], want["o"])
	return res
}

// checkAttention compares the kernel's output with the reference's: f32 arithmetic and ex2.approx
// against float64, plus the output's own rounding.
func checkAttention(t *testing.T, got, want *tensor.Tensor) {
	t.Helper()
	checkAttentionWithin(t, got, want, map[ir.DType]float64{ir.F32: 2e-5, ir.F16: 2e-3, ir.BF16: 1e-2}[want.Type.DType])
}

// TestAttentionSkipsHiddenTiles: a causal kernel stops at the block's last visible key, so it
// executes about half the instructions of the same shape unmasked.
func TestAttentionSkipsHiddenTiles(t *testing.T) { checkCausalShare(t, ir.F32, 64, 8, 0.65) }

// checkCausalShare runs attention of one head, L = S = n, head dim e, causal and unmasked, and
// wants the causal kernel to execute at most the share limit of the unmasked one's warp
// instructions.
func checkCausalShare(t *testing.T, d ir.DType, n, e int, limit float64) {
	t.Helper()
	count := func(mask string) int64 {
		g := attentionGraph(t, d, 1, 1, 1, n, n, e, e, mask, nil)
		res := runKernel(t, Kernel{Name: "k0_attention", Graph: g}, inputsFor(g, 1, 1))
		return res.stats.WarpInsts
	}
	causal, full := count(ops.MaskCausal), count(ops.MaskNone)
	t.Logf("warp instructions at L = S = %d: causal %d, unmasked %d", n, causal, full)
	if r := float64(causal) / float64(full); r > limit {
		t.Errorf("causal attention executes %d instructions, unmasked %d: ratio %.2f, want at most %.2f", causal, full, r, limit)
	}
}

// TestAttentionStridedOperands: the template reads q, k, v and the bias through views in place:
// heads split out of a fused qkv buffer's rows and transposed, a KV head broadcast to every
// query head (multi-query without a copy), a bias broadcast over heads.
func TestAttentionStridedOperands(t *testing.T) {
	g := stridedAttentionGraph(t, ir.F32, 2, 6, 3, 8, 0, 0.3)
	in := inputsFor(g, 5, 1)
	runAttention(t, g, in)
}

// stridedAttentionGraph is causal attention with a bias over views: q and v are the heads of a
// fused [b, l, start + 2·h·e] buffer's columns start…, k the columns start… of a [b, l, start+e]
// buffer as one KV head broadcast to h, the bias an [l, l] broadcast over heads.
func stridedAttentionGraph(t *testing.T, d ir.DType, b, l, h, e, start int, scale float64) *ir.Graph {
	t.Helper()
	g := ir.NewGraph("strided")
	add := func(op string, attrs ir.Attrs, args ...*ir.Value) *ir.Value {
		ts := make([]ir.Type, len(args))
		for i, a := range args {
			ts[i] = a.Type
		}
		ty, err := ops.Infer(op, ts, attrs)
		if err != nil {
			t.Fatal(err)
		}
		return g.Add(op, ty, attrs, args...)
	}
	qv := g.Input("qv", ir.T(d, b, l, start+2*h*e), nil)
	kin := g.Input("k", ir.T(d, b, l, start+e), nil)
	bias := g.Input("bias", ir.T(d, l, l), nil)
	heads := func(lo int) *ir.Value {
		x := add("slice", ir.Attrs{"start": []int{0, 0, lo}, "limit": []int{b, l, lo + h*e}}, qv)
		x = add("reshape", ir.Attrs{"shape": []int{b, l, h, e}}, x)
		return add("transpose", ir.Attrs{"perm": []int{0, 2, 1, 3}}, x)
	}
	q, v := heads(start), heads(start+h*e)
	k := add("slice", ir.Attrs{"start": []int{0, 0, start}, "limit": []int{b, l, start + e}}, kin)
	k = add("reshape", ir.Attrs{"shape": []int{b, 1, l, e}}, k)
	k = add("broadcast_in_dim", ir.Attrs{"dims": []int{0, 1, 2, 3}, "shape": []int{b, h, l, e}}, k)
	bb := add("broadcast_in_dim", ir.Attrs{"dims": []int{2, 3}, "shape": []int{1, h, l, l}}, bias)
	g.SetOutput("o", add(ops.AttentionOp, ir.Attrs{"scale": scale, "mask": ops.MaskCausal, "additive": true}, q, k, v, bb))
	return g
}

// TestAttentionPositionDTypes: the position operand is read as the integers of its dtype (the op
// table's i64, i32, i8, u8), sign- or zero-extended, by the CUDA-core, split-KV and tensor-core
// templates. A
// 4-byte load of an i8 or u8 vector read past its end (memcheck) and mixed neighbours' bytes in.
func TestAttentionPositionDTypes(t *testing.T) {
	for _, d := range []ir.DType{ir.I64, ir.I32, ir.I8, ir.U8} {
		for _, c := range []attnCase{
			{2, 4, 1, 3, 37, 8, 8, ops.MaskPosition, nil, []int64{34, 5}, ir.F32},
			{3, 2, 1, 1, 70, 64, 64, ops.MaskPosition, nil, []int64{69, 0, 7}, ir.F32}, // split-KV
			{2, 2, 1, 20, 40, 64, 64, ops.MaskPosition, nil, []int64{10, 5}, ir.F16},   // tensor cores
		} {
			pos := slices.Clone(c.pos)
			if d == ir.U8 {
				pos[1] = 200 // past the cache: clamped
			} else {
				pos[1] = -1 // before the first key: sees none of them
			}
			t.Run(d.String()+"_"+c.String(), func(t *testing.T) {
				g := attentionGraph(t, c.d, c.b, c.h, c.kvh, c.l, c.s, c.e, c.ev, c.mask, c.bias)
				for _, v := range g.Inputs() {
					if v.Name == "pos" {
						v.Type = ir.T(d, c.b)
					}
				}
				res := runAttention(t, g, attnInputs(g, 3, pos))
				if c.d == ir.F16 && !strings.Contains(res.ptx, "mma.sync") {
					t.Errorf("an f16 prefill should take the tensor-core template")
				}
			})
		}
	}
}
