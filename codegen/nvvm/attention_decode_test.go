package nvvm

import (
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// TestAttentionDecodeKernel runs codegen/ptx's split-KV test table through the NVVM producer:
// its own entry (libNVVM compiles it; ptxas sm_80 and sm_90 without spills) agrees with the
// reference and bit for bit with codegen/ptx's kernel, launches as codegen/ptx's (grid, block,
// scratch), and leaves the scratch zero: multi-head, grouped and multi-query heads, one to four
// query rows, caches that are not a multiple of the chunk or shorter than one, positions at the
// first and the last key and past the cache, head dims 20 to 128, every float dtype, every mask
// and an additive bias.
func TestAttentionDecodeKernel(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		attnCase
		splits int // the plan's, checked
	}{
		{attnCase{1, 2, 2, 1, 300, 64, 64, ops.MaskNone, nil, nil, ir.F32}, 10},
		{attnCase{1, 4, 1, 1, 200, 64, 64, ops.MaskPosition, nil, []int64{199}, ir.F32}, 7},
		{attnCase{2, 4, 2, 2, 150, 64, 64, ops.MaskPosition, nil, []int64{0, 148}, ir.F32}, 5},
		{attnCase{1, 8, 2, 4, 130, 80, 80, ops.MaskPosition, nil, []int64{60}, ir.F32}, 5},
		{attnCase{2, 2, 1, 1, 20, 96, 96, ops.MaskPosition, nil, []int64{19, -1}, ir.F32}, 1},
		{attnCase{1, 2, 1, 2, 129, 128, 128, ops.MaskCausal, nil, nil, ir.F32}, 5},
		{attnCase{1, 2, 2, 1, 160, 64, 64, ops.MaskNone, []int{1, 2, 1, 160}, nil, ir.F32}, 5},
		{attnCase{2, 4, 2, 1, 140, 64, 64, ops.MaskPosition, []int{2, 1, 1, 140}, []int64{70, 139}, ir.F32}, 5},
		{attnCase{1, 32, 4, 1, 256, 64, 64, ops.MaskPosition, nil, []int64{255}, ir.F16}, 8},
		{attnCase{1, 4, 4, 1, 200, 80, 80, ops.MaskPosition, nil, []int64{150}, ir.F16}, 7},
		{attnCase{4, 16, 16, 1, 300, 64, 64, ops.MaskNone, nil, nil, ir.F16}, 4},
		{attnCase{1, 6, 2, 4, 100, 96, 96, ops.MaskNone, nil, nil, ir.F16}, 4},
		{attnCase{1, 2, 1, 1, 300, 128, 128, ops.MaskPosition, []int{1, 1, 1, 300}, []int64{299}, ir.BF16}, 10},
		{attnCase{2, 2, 2, 2, 70, 64, 64, ops.MaskCausal, nil, nil, ir.BF16}, 3},
		{attnCase{1, 2, 1, 1, 100, 20, 20, ops.MaskPosition, nil, []int64{80}, ir.F16}, 4},
		{attnCase{1, 8, 1, 4, 300, 128, 128, ops.MaskPosition, nil, []int64{290}, ir.F16}, 10},
		{attnCase{1, 4, 2, 1, 90, 64, 32, ops.MaskNone, nil, nil, ir.F32}, 3}, // Ev < E
	} {
		t.Run(c.String(), func(t *testing.T) {
			g := c.graph(t)
			if sp, ok := splitkv.Of(g.Outputs[0].Value); !ok || sp.Splits != c.splits {
				t.Fatalf("split-KV plan %+v (taken %v), want %d splits", sp, ok, c.splits)
			}
			in := inputsFor(g, 7)
			if c.pos != nil {
				copy(in["pos"].I, c.pos)
			}
			checkOwnAttention(t, p, g, in)
		})
	}
}

// checkOwnAttention compiles attention graph g with p: the entry must be the NVVM producer's own
// (libNVVM compiles it) and assemble for sm_80 and sm_90 without spills; it runs twice on one
// device (runTwice), agrees with the reference (checkAttention) and bit for bit with
// codegen/ptx's entry, whose launch (grid, block, parameters) it shares. It returns the module
// and the stats of a run.
func checkOwnAttention(t *testing.T, p *Producer, g *ir.Graph, in map[string]*tensor.Tensor) (string, *sim.Stats) {
	t.Helper()
	return checkOwnAttentionFor(t, p, g, in, plan.Target{SM: 80})
}

// checkOwnAttentionFor is checkOwnAttention for target tg: under tf32, f32 attention is held to
// tf32's tolerance of the reference.
func checkOwnAttentionFor(t *testing.T, p *Producer, g *ir.Graph, in map[string]*tensor.Tensor, tg plan.Target) (string, *sim.Stats) {
	t.Helper()
	k := plan.Kernel{Name: "k0_attention", Graph: g}
	text, launches, err := p.Module([]plan.Kernel{k}, tg)
	if err != nil {
		t.Fatal(err)
	}
	if launches[0].Producer == "ptx" {
		t.Fatalf("codegen/ptx's entry, want the NVVM producer's own (notes %q)", launches[0].Notes)
	}
	regs := assemble(t, text, []plan.Kernel{k})
	t.Logf("registers %v", regs[k.Name])
	got, st := runTwice(t, text, k, launches[0], in)
	want, err := ref.Run(g, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tg.TF32 && got.Type.DType == ir.F32 {
		rel, _ := tolerance.Tolerance(ir.F32, true, 0)
		checkAttentionWithin(t, got, want["o"], rel)
	} else {
		checkAttention(t, got, want["o"])
	}
	emitted := runPTX(t, k, tg, launches[0], in)
	compare(t, "o (codegen/ptx)", got, emitted["o"], true, g.Outputs[0].Value.Type.DType, false, 0)
	return text, st
}

// runPTX compiles k with codegen/ptx for target tg, fails the test unless its launch has l's grid,
// block and parameters, and runs its entry on in (checks on): codegen/ptx's outputs, which the
// NVVM producer's entry of launch l must equal bit for bit.
func runPTX(t *testing.T, k plan.Kernel, tg plan.Target, l plan.Launch, in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	text, launches, err := ptx.Module([]plan.Kernel{k}, tg)
	if err != nil {
		t.Fatal(err)
	}
	if pl := launches[0]; fmt.Sprint(pl.Grid, pl.Block, pl.Params) != fmt.Sprint(l.Grid, l.Block, l.Params) {
		t.Errorf("launch %v %v %v, codegen/ptx's %v %v %v", l.Grid, l.Block, l.Params, pl.Grid, pl.Block, pl.Params)
	}
	out, _ := run(t, text, k, launches[0], in)
	return out
}

// runTwice runs the kernel twice on one device, the scratch carried over: the second launch must
// give the first's bits, and each must leave the whole scratch zero.
func runTwice(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor) (*tensor.Tensor, *sim.Stats) {
	t.Helper()
	sr := loadRun(t, text, k, l, in)
	var first *tensor.Tensor
	var st *sim.Stats
	for n := range 2 {
		var err error
		if st, err = sr.m.Launch(sr.entry, sr.cfg, sr.args...); err != nil {
			t.Fatalf("sim launch %d: %v", n, err)
		}
		sr.checkScratch(t, true)
		_, out := sr.read(t)
		if first == nil {
			first = out["o"]
		} else {
			compare(t, "o (second launch)", out["o"], first, true, first.Type.DType, false, 0)
		}
	}
	return first, st
}

// TestAttentionDecodeBlockOrders: whichever block of a (batch entry, KV head) finishes last
// combines its chunks, in chunk order: the same bits under every block order, no race on global
// memory between the blocks, and the scratch left zero.
func TestAttentionDecodeBlockOrders(t *testing.T) {
	p := requireProducer(t)
	g := attnCase{2, 4, 2, 2, 200, 64, 64, ops.MaskPosition, []int{2, 1, 2, 200}, nil, ir.F32}.graph(t)
	k := plan.Kernel{Name: "k0_attention", Graph: g}
	text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if launches[0].Grid[0] < 2 || launches[0].Producer == "ptx" {
		t.Fatalf("launch %+v: want the NVVM producer's split entry", launches[0])
	}
	in := inputsFor(g, 9)
	in["pos"].I[0], in["pos"].I[1] = 120, 198
	sr := loadRun(t, text, k, launches[0], in)
	var first string
	for _, order := range []sim.BlockOrder{sim.InOrder, sim.Reverse, sim.RandomOrder} {
		cfg := sr.cfg
		cfg.Order, cfg.Seed, cfg.RaceGlobal = order, 3, true
		if _, err := sr.m.Launch(sr.entry, cfg, sr.args...); err != nil {
			t.Fatalf("%v: %v", order, err)
		}
		sr.checkScratch(t, true)
		_, out := sr.read(t)
		if bits := string(out["o"].Bytes()); first == "" {
			first = bits
		} else if bits != first {
			t.Errorf("blocks %v give other bits", order)
		}
	}
}

// TestAttentionDecodeSkipsHiddenChunks: chunks past pos[b] load nothing, so a step at the
// cache's first position executes a fraction of the instructions of one at its last.
func TestAttentionDecodeSkipsHiddenChunks(t *testing.T) {
	p := requireProducer(t)
	g := attnCase{1, 2, 2, 1, 512, 64, 64, ops.MaskPosition, nil, nil, ir.F16}.graph(t)
	k := plan.Kernel{Name: "k0_attention", Graph: g}
	text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	count := func(pos int64) int64 {
		in := inputsFor(g, 1)
		in["pos"].I[0] = pos
		_, st := run(t, text, k, launches[0], in)
		return st.WarpInsts
	}
	first, last := count(0), count(511)
	t.Logf("warp instructions at S = 512: pos 0 %d, pos 511 %d", first, last)
	if r := float64(first) / float64(last); r > 0.3 {
		t.Errorf("pos 0 executes %d instructions, pos 511 %d: ratio %.2f, want the hidden chunks skipped", first, last, r)
	}
}
