package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// symAttnCase is attention over q [batch, H, seq, E], k and v [batch, KVH, seq, E|Ev] and an
// optional bias whose seq dims follow, built once at the bounds (batch ≤ b, seq ≤ l).
type symAttnCase struct {
	b, h, kvh, l, e, ev int
	mask                string
	bias                []int // the bias's bound shape; 1 where it broadcasts
	symBatch            bool
	d                   ir.DType // f32 when unset: CUDA cores; f16 and bf16 take tensor cores
	tf32                bool     // f32 on tf32 tensor cores
}

func (c symAttnCase) dtype() ir.DType {
	if c.d == ir.Invalid {
		return ir.F32
	}
	return c.d
}

// sizes gives each operand of the case's graph g its sizes over the dims batch and seq.
func (c symAttnCase) sizes(g *ir.Graph) map[*ir.Value][]sym.Expr {
	batch, seq := sym.Const(int64(c.b)), sym.Sym("seq")
	if c.symBatch {
		batch = sym.Sym("batch")
	}
	m := map[*ir.Value][]sym.Expr{}
	at := func(s ir.Shape) []sym.Expr {
		out := []sym.Expr{batch, sym.Const(int64(s[1])), seq, sym.Const(int64(s[3]))}
		if s[0] == 1 && c.b != 1 {
			out[0] = sym.Const(1)
		}
		return out
	}
	for _, v := range g.Inputs() {
		if v.Type.Shape.Rank() == 1 { // positions [batch]
			m[v] = []sym.Expr{batch}
			continue
		}
		s := at(v.Type.Shape)
		if v.Name == "bias" {
			s[3] = seq
		}
		m[v] = s
	}
	m[g.Outputs[0].Value] = at(g.Outputs[0].Value.Type.Shape)
	return m
}

// TestSymbolicAttentionKernel: the CUDA-core attention template at symbolic sizes, built once at
// the bounds, runs on the memchecked simulator at several sequence lengths and batches (buffers
// contiguous at the run's sizes at the start of their bound-sized allocations) equal to the
// reference at those sizes: masks none and causal (tiles past the causal limit skipped from the
// run's length), ragged last tiles, grouped KV heads, an additive bias whose sizes follow, and a
// position mask (a per-row key limit from pos[b], clamped to the run's length).
func TestSymbolicAttentionKernel(t *testing.T) {
	for _, c := range []symAttnCase{
		{2, 2, 2, 40, 8, 8, ops.MaskNone, nil, false, 0, false},
		{2, 2, 2, 40, 8, 8, ops.MaskCausal, nil, false, 0, false},
		{3, 4, 2, 37, 16, 12, ops.MaskCausal, nil, true, 0, false},
		{2, 2, 1, 19, 8, 8, ops.MaskNone, []int{2, 1, 19, 19}, true, 0, false},
		{1, 2, 2, 33, 8, 8, ops.MaskCausal, []int{1, 2, 33, 33}, false, 0, false},
		{2, 2, 1, 80, 16, 16, ops.MaskCausal, nil, true, ir.F16, false},
		{2, 4, 2, 70, 32, 32, ops.MaskNone, nil, false, ir.BF16, false},
		{2, 2, 2, 40, 16, 16, ops.MaskNone, []int{2, 1, 40, 40}, true, ir.F16, false},
		{2, 2, 2, 70, 64, 64, ops.MaskCausal, nil, true, 0, true},
		{3, 4, 2, 37, 16, 12, ops.MaskPosition, nil, true, 0, false},
		{2, 2, 1, 19, 8, 8, ops.MaskPosition, []int{2, 1, 19, 19}, true, 0, false},
	} {
		t.Run(fmt.Sprintf("tf32%v_%s_B%d_H%d_KVH%d_L%d_E%d_Ev%d_%s_bias%v_symbatch%v", c.tf32, c.dtype(), c.b, c.h, c.kvh, c.l, c.e, c.ev, c.mask, c.bias, c.symBatch), func(t *testing.T) {
			g := attentionGraph(t, c.dtype(), c.b, c.h, c.kvh, c.l, c.l, c.e, c.ev, c.mask, c.bias)
			k := Kernel{Name: "k0_attention", Graph: g, Symbolic: true, Sizes: c.sizes(g)}
			text, launches, err := Module([]Kernel{k}, Target{SM: 80, TF32: c.tf32})
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			l := launches[0]
			if l.Work == nil || l.Work.Tile != 1 || !strings.Contains(l.Work.Elements, "seq") {
				t.Fatalf("work %+v, want the block count over seq", l.Work)
			}
			if tc := c.dtype() != ir.F32 || c.tf32; tc != strings.Contains(text, "mma.sync") {
				t.Fatalf("%s: tensor cores %v, want %v", c.dtype(), !tc, tc)
			}
			for _, n := range []int{1, 2, 5, 13, 17, c.l} {
				for _, b := range []int{1, c.b} {
					if !c.symBatch && b != c.b {
						continue
					}
					c.runAt(t, text, l, g, b, n)
				}
			}
		})
	}
}

// runAt runs the symbolic kernel at batch b and sequence length n and checks it against the
// reference of the static graph at those sizes.
func (c symAttnCase) runAt(t *testing.T, text string, l Launch, g *ir.Graph, b, n int) {
	t.Helper()
	var bias []int
	if c.bias != nil {
		bias = []int{c.bias[0], c.bias[1], n, n}
		if bias[0] != 1 {
			bias[0] = b
		}
	}
	gs := attentionGraph(t, c.dtype(), b, c.h, c.kvh, n, n, c.e, c.ev, c.mask, bias)
	in := attnInputs(gs, uint64(7*n+b), nil)
	want, err := ref.Run(gs, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]int64{"seq": int64(n), "batch": int64(b)}
	var args []any
	var out uint64
	for _, a := range l.Params {
		switch a.Kind {
		case ArgSize:
			if a.Expr == "" {
				e, err := sym.Parse(l.Work.Elements)
				if err != nil {
					t.Fatal(err)
				}
				v, _ := e.Eval(env)
				args = append(args, uint32(v))
				continue
			}
			args = append(args, uint32(env[a.Expr]))
			continue
		case ArgInput:
			addr, err := dev.Alloc(g.Inputs()[a.Index].Type.Bytes()) // at the bound
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.Write(addr, in[a.Name].Bytes()); err != nil { // contiguous at n
				t.Fatal(err)
			}
			args = append(args, addr)
		case ArgOutput:
			if out, err = dev.Alloc(g.Outputs[0].Value.Type.Bytes()); err != nil {
				t.Fatal(err)
			}
			args = append(args, out)
		default:
			t.Fatalf("unexpected parameter %+v", a)
		}
	}
	e, err := sym.Parse(l.Work.Elements)
	if err != nil {
		t.Fatal(err)
	}
	blocks, _ := e.Eval(env)
	if want := ceilDiv(n, attnWarps); c.dtype() == ir.F32 && !c.tf32 && blocks != int64(b*c.h*want) {
		t.Fatalf("work %s at batch %d, seq %d is %d blocks, want %d", l.Work.Elements, b, n, blocks, b*c.h*want)
	}
	cfg := sim.Config{Grid: sim.Dim3{X: int(max(1, blocks)), Y: 1, Z: 1}, Block: sim.Dim3{X: l.Block[0], Y: 1, Z: 1}}
	if _, err := m.Launch("k0_attention", cfg, args...); err != nil {
		t.Fatalf("batch %d, seq %d: %v", b, n, err)
	}
	buf := make([]byte, want["o"].Type.Bytes())
	if err := dev.Read(out, buf); err != nil {
		t.Fatal(err)
	}
	got, err := tensor.FromBytes(want["o"].Type, buf)
	if err != nil {
		t.Fatal(err)
	}
	if c.tf32 {
		rel, _ := tolerance.Tolerance(ir.F32, true, 0)
		checkAttentionWithin(t, got, want["o"], rel)
		return
	}
	checkAttention(t, got, want["o"])
}

// What the attention templates do not run at symbolic sizes yet is refused naming it.
func TestSymbolicAttentionRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    symAttnCase
		d    ir.DType
		want string
	}{
		{"symbolic heads", symAttnCase{2, 2, 2, 40, 8, 8, ops.MaskNone, nil, false, 0, false}, ir.F32, "attention's heads and head sizes must be static"},
		{"appending to a cache over a symbolic length", symAttnCase{}, ir.F32, "attention appending to a cache runs at symbolic sizes over a batch alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g *ir.Graph
			var sizes map[*ir.Value][]sym.Expr
			switch tc.name {
			case "appending to a cache over a symbolic length": // the caches' length is seq
				g = appendGraph(t, ir.F32, ir.I64, 2, 4, 2, 1, 64, 32)
				sizes = batchSizes(g, 2)
				for v, s := range sizes {
					if len(s) == 4 && v.Type.Shape[2] == 64 {
						s[2] = sym.Sym("seq")
					}
				}
			default:
				g = attentionGraph(t, tc.d, tc.c.b, tc.c.h, tc.c.kvh, tc.c.l, tc.c.l, tc.c.e, tc.c.ev, tc.c.mask, tc.c.bias)
				sizes = tc.c.sizes(g)
			}
			if tc.name == "symbolic heads" {
				sizes[g.Inputs()[0]][1] = sym.Sym("heads")
			}
			_, _, err := Generate(Kernel{Name: "k0_attention", Graph: g, Symbolic: true, Sizes: sizes, InPlace: true}, Target{SM: 80})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "k0_attention: ") {
				t.Errorf("Generate = %v, want %q", err, tc.want)
			}
		})
	}
}
