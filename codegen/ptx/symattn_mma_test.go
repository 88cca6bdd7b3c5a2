package ptx

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// symUntouched fills the bound-sized output buffers of a symbolic run: bytes past the run's sizes
// must keep it.
const symUntouched = 0x5a

// symLSECase is a symbolic attention kernel, with or without its rows' log-sum-exp (the forward of
// a train step), built once at the bounds (batch ≤ c.b, seq ≤ c.l).
type symLSECase struct {
	symAttnCase
	lse bool
}

func (c symLSECase) graph(t *testing.T, b, n int) *ir.Graph {
	var bias []int
	if c.bias != nil {
		bias = []int{c.bias[0], c.bias[1], n, n}
		if bias[0] != 1 {
			bias[0] = b
		}
	}
	a := attnCase{b, c.h, c.kvh, n, n, c.e, c.ev, c.mask, bias, nil, c.dtype()}
	if c.lse {
		return lseGraph(t, a, true)
	}
	return attentionGraph(t, c.dtype(), b, c.h, c.kvh, n, n, c.e, c.ev, c.mask, bias)
}

// symPositions gives row i of sequence j the keys ≤ pos[j]+i: rows that see no key (NaN, −inf),
// a prefix of the keys, and limits past the run's S (clamped to it).
func symPositions(b, n int) []int64 {
	pos := make([]int64, b)
	for j := range pos {
		pos[j] = []int64{int64(n / 3), -5, int64(3 * n), 0, int64(n - 2)}[j%5]
	}
	return pos
}

// TestSymbolicAttentionMMA: the tensor-core template (f16, bf16; f32 on tf32) and the CUDA-core
// one (f32) at symbolic batch and sequence length, under causal and position masks, with an
// additive bias and grouped KV heads, with and without the rows' log-sum-exp, built once at the
// bounds and run at batch and length 1, a prime and the bound on the memchecked, racechecked
// simulator. Each run matches the reference at its sizes, leaves the output bytes past the run's
// sizes untouched, and is bit for bit the static kernel built for its sizes: both templates do
// the same arithmetic in the same order at every size (the same tiles of keys, the same folds);
// only the sizes' sources differ. (A static kernel of one query row over few keys takes the
// split-KV template instead, which is not compared.)
func TestSymbolicAttentionMMA(t *testing.T) {
	for _, c := range []symLSECase{
		{symAttnCase{3, 4, 2, 70, 64, 64, ops.MaskPosition, nil, true, ir.F16, false}, false},
		{symAttnCase{3, 2, 1, 70, 64, 64, ops.MaskPosition, []int{3, 1, 70, 70}, true, ir.BF16, false}, false},
		{symAttnCase{3, 4, 2, 70, 64, 64, ops.MaskPosition, nil, true, ir.BF16, false}, true},
		{symAttnCase{3, 2, 2, 70, 64, 64, ops.MaskCausal, []int{1, 2, 70, 70}, true, ir.F16, false}, true},
		{symAttnCase{3, 2, 2, 70, 64, 64, ops.MaskNone, nil, true, ir.BF16, false}, true},
		{symAttnCase{3, 2, 1, 40, 64, 64, ops.MaskPosition, nil, true, 0, true}, true},
		{symAttnCase{3, 4, 2, 37, 16, 12, ops.MaskPosition, nil, true, 0, false}, true},
		{symAttnCase{3, 2, 2, 37, 16, 16, ops.MaskCausal, []int{3, 1, 37, 37}, true, 0, false}, true},
	} {
		t.Run(fmt.Sprintf("tf32%v_%s_H%d_KVH%d_L%d_E%d_%s_bias%v_lse%v", c.tf32, c.dtype(), c.h, c.kvh, c.l, c.e, c.mask, c.bias, c.lse), func(t *testing.T) {
			tgt := Target{SM: 80, TF32: c.tf32}
			g := c.graph(t, c.b, c.l)
			sizes := c.sizes(g)
			if c.lse {
				sizes[g.Outputs[1].Value] = []sym.Expr{sym.Sym("batch"), sym.Const(int64(c.h)), sym.Sym("seq")}
			}
			k := Kernel{Name: "k0_attention", Graph: g, Symbolic: true, Sizes: sizes}
			text, launches, err := Module([]Kernel{k}, tgt)
			if err != nil {
				t.Fatal(err)
			}
			assemble(t, text)
			if tc := c.dtype() != ir.F32 || c.tf32; tc != strings.Contains(text, "mma.sync") {
				t.Fatalf("tensor cores %v, want %v", !tc, tc)
			}
			for _, r := range [][2]int{{1, 1}, {2, 1}, {1, 17}, {2, 23}, {c.b, c.l}} {
				b, n := r[0], r[1]
				gs := c.graph(t, b, n)
				in := attnInputs(gs, uint64(7*n+b), nil)
				if c.mask == ops.MaskPosition {
					copy(in["pos"].I, symPositions(b, n))
				}
				got, _ := runSymAttn(t, text, "k0_attention", launches[0], g, map[string]int64{"batch": int64(b), "seq": int64(n)}, in)
				want, err := ref.Run(gs, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				var run *simRun // the static kernel's, where it takes the same template
				if _, decode := splitkv.Of(gs.Outputs[0].Value); !decode {
					run = runStatic(t, "k0_attention", gs, in, tgt)
				}
				for name, x := range symOutputs(t, gs, got, run, b, n) {
					switch {
					case name == "lse":
						checkLSE(t, x, want["lse"], c.tf32)
					case c.tf32:
						rel, _ := tolerance.Tolerance(ir.F32, true, 0)
						checkAttentionWithin(t, x, want["o"], rel)
					default:
						checkAttention(t, x, want["o"])
					}
				}
			}
		})
	}
}

// runStatic builds the static kernel name of graph gs for target tgt and runs it on the simulator.
func runStatic(t *testing.T, name string, gs *ir.Graph, in map[string]*tensor.Tensor, tgt Target) *simRun {
	t.Helper()
	text, l, err := Module([]Kernel{{Name: name, Graph: gs}}, tgt)
	if err != nil {
		t.Fatal(err)
	}
	run, err := launchSim(t, text, name, l[0], gs, in)
	if err != nil {
		t.Fatalf("static launch: %v", err)
	}
	return run
}

// symOutputs checks the whole output buffers got of a symbolic run at batch b and sequence n of
// gs's sizes: the bytes past the run's sizes untouched and, where run (the static kernel's) is
// not nil, the run's bytes its. It returns each output at the run's sizes.
func symOutputs(t *testing.T, gs *ir.Graph, got map[string][]byte, run *simRun, b, n int) map[string]*tensor.Tensor {
	t.Helper()
	out := map[string]*tensor.Tensor{}
	for _, o := range gs.Outputs {
		ty := o.Value.Type
		buf := got[o.Name][:ty.Bytes()]
		for i, x := range got[o.Name][ty.Bytes():] {
			if x != symUntouched {
				t.Fatalf("batch %d, seq %d: %s byte %d past the run's %d written", b, n, o.Name, ty.Bytes()+i, ty.Bytes())
			}
		}
		if run != nil {
			static := make([]byte, ty.Bytes())
			if err := run.dev.Read(run.outAddr[o.Name], static); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf, static) {
				t.Errorf("batch %d, seq %d: %s differs from the static kernel's", b, n, o.Name)
			}
		}
		x, err := tensor.FromBytes(ty, buf)
		if err != nil {
			t.Fatal(err)
		}
		out[o.Name] = x
	}
	return out
}

// runSymAttn launches symbolic attention kernel name, l (of g, at the bounds) at the sizes env on the
// simulator: inputs contiguous at env's sizes at the start of their bound-sized buffers, outputs
// bound-sized and filled with symUntouched. It returns each output's whole buffer and the
// launch's counters.
func runSymAttn(t *testing.T, text, name string, l Launch, g *ir.Graph, env map[string]int64, in map[string]*tensor.Tensor) (map[string][]byte, *sim.Stats) {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sym.Parse(l.Work.Elements)
	if err != nil {
		t.Fatal(err)
	}
	blocks, _ := e.Eval(env)
	var args []any
	outs := map[string]uint64{}
	for _, a := range l.Params {
		switch a.Kind {
		case ArgSize:
			if a.Expr == "" {
				args = append(args, uint32(blocks))
			} else {
				args = append(args, uint32(env[a.Expr]))
			}
			continue
		case ArgInput:
			addr, err := dev.Alloc(g.Inputs()[a.Index].Type.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.Write(addr, in[a.Name].Bytes()); err != nil {
				t.Fatal(err)
			}
			args = append(args, addr)
		case ArgOutput:
			n := g.Outputs[a.Index].Value.Type.Bytes()
			addr, err := dev.Alloc(n)
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.Write(addr, bytes.Repeat([]byte{symUntouched}, n)); err != nil {
				t.Fatal(err)
			}
			outs[a.Name] = addr
			args = append(args, addr)
		default:
			t.Fatalf("unexpected parameter %+v", a)
		}
	}
	cfg := sim.Config{Grid: sim.Dim3{X: int(max(1, blocks)), Y: 1, Z: 1}, Block: sim.Dim3{X: l.Block[0], Y: 1, Z: 1}, SharedBytes: l.SharedBytes}
	st, err := m.Launch(name, cfg, args...)
	if err != nil {
		t.Fatalf("%v: %v", env, err)
	}
	got := map[string][]byte{}
	for _, o := range g.Outputs {
		got[o.Name] = make([]byte, o.Value.Type.Bytes())
		if err := dev.Read(outs[o.Name], got[o.Name]); err != nil {
			t.Fatal(err)
		}
	}
	return got, st
}

// TestSymbolicAttentionCost: a kernel built once at the bounds and run at half of them issues
// about the instructions of the static kernel built for that size (its sizes computed once at
// its start, its loops the same), within 10%: the tensor-core forward under a position mask and
// causal with its LSE, the CUDA-core forward with its LSE, the CUDA-core dq and dk/dv, and the
// tensor-core dq and dk/dv. The
// counts are docs/perf.md's (go test -run TestSymbolicAttentionCost -v ./codegen/ptx).
func TestSymbolicAttentionCost(t *testing.T) {
	for _, c := range []struct {
		name string
		c    symLSECase
		wrt  string // a gradient's kernel, or the forward
	}{
		{"f16 position, GQA", symLSECase{symAttnCase{4, 4, 2, 256, 64, 64, ops.MaskPosition, nil, true, ir.F16, false}, false}, ""},
		{"bf16 causal, LSE", symLSECase{symAttnCase{4, 4, 4, 256, 64, 64, ops.MaskCausal, nil, true, ir.BF16, false}, true}, ""},
		{"f32 causal, LSE", symLSECase{symAttnCase{4, 4, 2, 64, 32, 32, ops.MaskCausal, nil, true, 0, false}, true}, ""},
		{"f32 causal, dq", symLSECase{symAttnCase{4, 4, 2, 64, 32, 32, ops.MaskCausal, nil, true, 0, false}, true}, "q"},
		{"f32 causal, dk and dv", symLSECase{symAttnCase{4, 4, 2, 64, 32, 32, ops.MaskCausal, nil, true, 0, false}, true}, "kv"},
		{"f16 causal, dq, tensor cores", symLSECase{symAttnCase{4, 4, 2, 256, 64, 64, ops.MaskCausal, nil, true, ir.F16, false}, true}, "q"},
		{"bf16 causal, dk and dv, tensor cores", symLSECase{symAttnCase{4, 4, 2, 256, 64, 64, ops.MaskCausal, nil, true, ir.BF16, false}, true}, "kv"},
		{"bf16 dk and dv, head dim 128, tensor cores", symLSECase{symAttnCase{4, 2, 2, 256, 128, 128, ops.MaskNone, nil, true, ir.BF16, false}, true}, "kv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, n := c.c.b/2, c.c.l/2
			graph := func(b, n int) *ir.Graph {
				if c.wrt == "" {
					return c.c.graph(t, b, n)
				}
				return attnGradGraph(t, attnCase{b, c.c.h, c.c.kvh, n, n, c.c.e, c.c.ev, c.c.mask, nil, nil, c.c.dtype()}, c.wrt)
			}
			g, gs := graph(c.c.b, c.c.l), graph(b, n)
			name := "k0_attention"
			var sizes map[*ir.Value][]sym.Expr
			var in map[string]*tensor.Tensor
			if c.wrt == "" {
				sizes = c.c.sizes(g)
				if c.c.lse {
					sizes[g.Outputs[1].Value] = []sym.Expr{sym.Sym("batch"), sym.Const(int64(c.c.h)), sym.Sym("seq")}
				}
				in = attnInputs(gs, 3, nil)
				if c.c.mask == ops.MaskPosition {
					copy(in["pos"].I, []int64{int64(n / 2), int64(n)})
				}
			} else {
				name, sizes = "k0_attention_grad", symGradSizes(g, c.c.b)
				in = attnGradInputs(t, gs, 3)
			}
			text, launches, err := Module([]Kernel{{Name: name, Graph: g, Symbolic: true, Sizes: sizes}}, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			_, st := runSymAttn(t, text, name, launches[0], g, map[string]int64{"batch": int64(b), "seq": int64(n)}, in)
			run := runStatic(t, name, gs, in, Target{SM: 80})
			ratio := float64(st.WarpInsts) / float64(run.stats.WarpInsts)
			t.Logf("batch %d, seq %d of bounds %d, %d: %d warp instructions built once, %d static (%.3f×)", b, n, c.c.b, c.c.l, st.WarpInsts, run.stats.WarpInsts, ratio)
			if ratio > 1.1 {
				t.Errorf("the symbolic kernel issues %.3f× the static kernel's instructions", ratio)
			}
		})
	}
}
