package nvvm

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// attnCase is one attention op over inputs q, k, v[, pos][, bias]: batch, heads, KV heads,
// query rows, keys, head dims, mask, bias shape (nil: none), positions (mask position) and
// dtype.
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

func (c attnCase) graph(t *testing.T) *ir.Graph {
	t.Helper()
	g := ir.NewGraph("attn")
	args := []*ir.Value{g.Input("q", ir.T(c.d, c.b, c.h, c.l, c.e), nil), g.Input("k", ir.T(c.d, c.b, c.kvh, c.s, c.e), nil),
		g.Input("v", ir.T(c.d, c.b, c.kvh, c.s, c.ev), nil)}
	if c.mask == ops.MaskPosition {
		args = append(args, g.Input("pos", ir.T(ir.I32, c.b), nil))
	}
	attrs := ir.Attrs{"scale": 1 / math.Sqrt(float64(c.e)), "mask": c.mask}
	if c.bias != nil {
		args = append(args, g.Input("bias", ir.T(c.d, c.bias...), nil))
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

// TestAttentionKernel runs codegen/ptx's attention test table through the NVVM producer on the
// simulator: every template (CUDA-core, split-KV, tensor-core) is this package's own entry
// (libNVVM compiles it, LLVM 14's llvm-as parses its IR when found) and agrees with the
// reference and bit for bit with codegen/ptx's kernel.
func TestAttentionKernel(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		attnCase
		own bool // the CUDA-core template: the NVVM producer's own entry
	}{
		{attnCase{1, 1, 1, 5, 7, 8, 8, ops.MaskNone, nil, nil, ir.F32}, true},
		{attnCase{2, 2, 2, 9, 9, 16, 16, ops.MaskCausal, nil, nil, ir.F32}, true},
		{attnCase{1, 4, 2, 6, 40, 33, 5, ops.MaskCausal, nil, nil, ir.F32}, true},
		{attnCase{2, 4, 1, 3, 37, 8, 8, ops.MaskPosition, nil, []int64{34, 5}, ir.F32}, true}, // split-KV (attention_decode.go)
		{attnCase{2, 4, 1, 9, 37, 8, 8, ops.MaskPosition, nil, []int64{-20, 5}, ir.F32}, true},
		{attnCase{2, 2, 1, 6, 70, 64, 64, ops.MaskPosition, nil, []int64{69, -1}, ir.F32}, true},
		{attnCase{2, 2, 2, 6, 6, 8, 8, ops.MaskNone, []int{2, 1, 6, 6}, nil, ir.F32}, true},
		{attnCase{1, 2, 1, 5, 5, 8, 4, ops.MaskCausal, []int{1, 2, 5, 5}, nil, ir.F32}, true},
		{attnCase{1, 2, 2, 5, 34, 64, 64, ops.MaskCausal, nil, nil, ir.F32}, true},
		{attnCase{1, 1, 1, 5, 20, 80, 80, ops.MaskCausal, nil, nil, ir.F32}, true},
		{attnCase{1, 2, 1, 5, 20, 96, 96, ops.MaskNone, nil, nil, ir.F32}, true},
		{attnCase{1, 1, 1, 5, 12, 128, 128, ops.MaskCausal, nil, nil, ir.F32}, true},
		{attnCase{1, 1, 1, 7, 9, 1, 0, ops.MaskNone, nil, nil, ir.F32}, true},
		{attnCase{2, 4, 2, 7, 33, 64, 64, ops.MaskCausal, nil, nil, ir.F16}, true},
		{attnCase{1, 2, 2, 9, 9, 16, 16, ops.MaskPosition, []int{1, 1, 9, 9}, []int64{6}, ir.F16}, true},
		{attnCase{2, 2, 1, 6, 10, 128, 128, ops.MaskCausal, nil, nil, ir.BF16}, true},
		{attnCase{1, 2, 1, 9, 13, 24, 24, ops.MaskNone, []int{1, 2, 9, 13}, nil, ir.BF16}, true},
		{attnCase{1, 2, 2, 16, 16, 16, 16, ops.MaskCausal, nil, nil, ir.F16}, true}, // tensor cores (attention_mma.go)
	} {
		t.Run(c.String(), func(t *testing.T) {
			g := c.graph(t)
			k := plan.Kernel{Name: "k0_attention", Graph: g}
			text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if own := launches[0].Producer != "ptx"; own != c.own {
				t.Fatalf("the NVVM producer's own entry: %v, want %v (notes %q)", own, c.own, launches[0].Notes)
			}
			assemble(t, text, []plan.Kernel{k})
			in := inputsFor(g, 3)
			if c.pos != nil {
				copy(in["pos"].I, c.pos)
			}
			got, _ := run(t, text, k, launches[0], in)
			want, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkAttention(t, got["o"], want["o"])
			if !c.own {
				return
			}
			ptxText, ptxLaunches, err := ptx.Module([]plan.Kernel{k}, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ptxLaunches[0].Grid, ptxLaunches[0].Block) != fmt.Sprint(launches[0].Grid, launches[0].Block) {
				t.Errorf("launch %v %v, codegen/ptx's %v %v", launches[0].Grid, launches[0].Block, ptxLaunches[0].Grid, ptxLaunches[0].Block)
			}
			emitted, _ := run(t, ptxText, k, ptxLaunches[0], in)
			compare(t, "o (codegen/ptx)", got["o"], emitted["o"], true, c.d, false, 0)
		})
	}
}

// TestAttentionLLVMAs: the attention kernels' NVVM IR (gcomp build --emit nvvm; CUDA-core,
// split-KV and tensor-core, the tensor-core forward writing its log-sum-exp and dk/dv on tensor
// cores) is valid LLVM IR to LLVM 14's llvm-as.
func TestAttentionLLVMAs(t *testing.T) {
	as := llvmAs(t)
	var graphs []*ir.Graph
	for _, c := range []attnCase{
		{2, 4, 1, 9, 37, 8, 8, ops.MaskPosition, nil, []int64{-20, 5}, ir.F32},
		{1, 2, 1, 9, 13, 24, 24, ops.MaskNone, []int{1, 2, 9, 13}, nil, ir.BF16},
		{2, 4, 2, 7, 33, 64, 64, ops.MaskCausal, nil, nil, ir.F16},
		{2, 4, 2, 2, 150, 64, 64, ops.MaskPosition, nil, nil, ir.F32},                // split-KV
		{1, 4, 2, 65, 65, 80, 80, ops.MaskCausal, []int{1, 4, 65, 65}, nil, ir.BF16}, // tensor cores
	} {
		graphs = append(graphs, c.graph(t))
	}
	mma := attnCase{1, 4, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F16}
	graphs = append(graphs, lseGraph(t, mma, true), attnGradGraph(t, mma, "kv"))
	for _, g := range graphs {
		c := g.Outputs[0].Value.Op
		ll, _, err := IR([]plan.Kernel{{Name: "k0_attention", Graph: g}}, plan.Target{SM: 80})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		cmd := exec.Command(as, "-o", "/dev/null", "-")
		cmd.Stdin = bytes.NewReader([]byte(ll))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: llvm-as: %v\n%s", c, err, out)
		}
	}
}

// checkAttention compares the kernel's output with the reference's: f32 arithmetic and
// ex2.approx against float64, plus the output's own rounding.
func checkAttention(t *testing.T, got, want *tensor.Tensor) {
	t.Helper()
	checkAttentionWithin(t, got, want, map[ir.DType]float64{ir.F32: 2e-5, ir.F16: 2e-3, ir.BF16: 1e-2}[want.Type.DType])
}

// checkAttentionWithin compares the kernel's output with the reference's within tol·(1+|want|);
// NaN (rows that see no key) must match NaN.
func checkAttentionWithin(t *testing.T, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	bad := 0
	for i := range want.F {
		w, g := want.F[i], got.F[i]
		if math.IsNaN(w) && math.IsNaN(g) || g == w { // NaN rows that see no key, a log-sum-exp's -inf
			continue
		}
		if !(math.Abs(g-w) <= tol*(1+math.Abs(w))) {
			if bad < 5 {
				t.Errorf("o[%d] = %g, want %g (tolerance %g)", i, g, w, tol)
			}
			bad++
		}
	}
}

// TestAttentionCost compares the two producers' attention entries (CUDA-core, split-KV,
// tensor-core) on the simulator:
// warp instructions executed and ptxas's sm_80 registers (docs/perf.md has the table). NVVM's
// must execute at most 10% more instructions than codegen/ptx's.
func TestAttentionCost(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []attnCase{
		{1, 4, 4, 64, 64, 32, 32, ops.MaskCausal, nil, nil, ir.F32}, // gpt's
		{1, 4, 4, 16, 16, 16, 16, ops.MaskNone, nil, nil, ir.F32},   // transformer's
		{1, 4, 2, 128, 128, 64, 64, ops.MaskCausal, nil, nil, ir.F32},
		{2, 4, 2, 7, 256, 128, 128, ops.MaskCausal, nil, nil, ir.BF16},
		{1, 12, 12, 1, 1024, 64, 64, ops.MaskNone, nil, nil, ir.F16},   // split-KV: GPT-2 small's decode
		{1, 32, 4, 1, 512, 64, 64, ops.MaskNone, nil, nil, ir.F16},     // split-KV: 8 rows per KV head
		{1, 4, 4, 128, 128, 64, 64, ops.MaskCausal, nil, nil, ir.F16},  // tensor cores
		{1, 2, 1, 200, 200, 128, 128, ops.MaskNone, nil, nil, ir.BF16}, // tensor cores, d = 128
	} {
		g := c.graph(t)
		k := plan.Kernel{Name: "k0_attention", Graph: g}
		in := inputsFor(g, 1)
		text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		ptxText, ptxLaunches, err := ptx.Module([]plan.Kernel{k}, plan.Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		_, st := run(t, text, k, launches[0], in)
		_, pst := run(t, ptxText, k, ptxLaunches[0], in)
		regs, pregs := assemble(t, text, []plan.Kernel{k}), assemble(t, ptxText, []plan.Kernel{k})
		t.Logf("%s: warp instructions nvvm %d, ptx %d (%.2f); sm_80 registers nvvm %d, ptx %d", c, st.WarpInsts, pst.WarpInsts,
			float64(st.WarpInsts)/float64(pst.WarpInsts), regs[k.Name]["sm_80"], pregs[k.Name]["sm_80"])
		if float64(st.WarpInsts) > 1.1*float64(pst.WarpInsts) {
			t.Errorf("%s: NVVM's entry executes %d warp instructions, codegen/ptx's %d", c, st.WarpInsts, pst.WarpInsts)
		}
	}
}

// TestAttentionPositionDTypes: the NVVM producer reads the position operand as the integers of
// its dtype (i64, i32, i8 sign-extended, u8 zero-extended) in the CUDA-core, split-KV and
// tensor-core templates, as codegen/ptx does (its TestAttentionPositionDTypes): the reference's
// output and codegen/ptx's bits. A u8 position sign-extended was read as negative.
func TestAttentionPositionDTypes(t *testing.T) {
	p := requireProducer(t)
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
				g := c.graph(t)
				for _, v := range g.Inputs() {
					if v.Name == "pos" {
						v.Type = ir.T(d, c.b)
					}
				}
				k := plan.Kernel{Name: "k0_attention", Graph: g}
				text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				in := inputsFor(g, 3)
				copy(in["pos"].I, pos)
				got, _ := run(t, text, k, launches[0], in)
				want, err := ref.Run(g, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				checkAttention(t, got["o"], want["o"])
				ptxText, ptxLaunches, err := ptx.Module([]plan.Kernel{k}, plan.Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				emitted, _ := run(t, ptxText, k, ptxLaunches[0], in)
				compare(t, "o (codegen/ptx)", got["o"], emitted["o"], true, c.d, false, 0)
			})
		}
	}
}
