package nvvm

import (
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// TestAttentionCostPorted is TestAttentionCost for the templates ported last: tf32 tensor-core
// attention, the split-KV kernel appending the cache rows, and the backward's log-sum-exp, dq and
// dk/dv kernels. Both entries on the simulator, same launch, same inputs (docs/perf.md has the
// table); NVVM's must execute at most 10% more warp instructions than codegen/ptx's.
func TestAttentionCostPorted(t *testing.T) {
	p := requireProducer(t)
	gpt := attnCase{1, 4, 4, 64, 64, 32, 32, ops.MaskCausal, nil, nil, ir.F32}
	gqa := attnCase{1, 4, 2, 128, 128, 64, 64, ops.MaskCausal, nil, nil, ir.F32}
	type costCase struct {
		name string
		k    plan.Kernel
		t    plan.Target
		in   map[string]*tensor.Tensor
		run  func(text string, l plan.Launch) *sim.Stats // nil: run
	}
	var cases []costCase
	for _, c := range []attnCase{gqa, {1, 2, 1, 200, 200, 128, 128, ops.MaskNone, nil, nil, ir.F32}} {
		g := c.graph(t)
		cases = append(cases, costCase{name: "tf32 " + c.String(), k: plan.Kernel{Name: "k0_attention", Graph: g}, t: tf32Target, in: inputsFor(g, 1)})
	}
	for _, c := range []struct {
		d                  ir.DType
		b, h, kvh, l, s, e int
	}{{ir.F32, 1, 4, 4, 1, 200, 64}, {ir.F16, 1, 32, 4, 1, 512, 64}} {
		g := appendGraph(t, c.d, ir.I64, c.b, c.h, c.kvh, c.l, c.s, c.e)
		in := inputsFor(g, 1)
		in["pos"].I[0] = int64(c.s - 1)
		k := plan.Kernel{Name: "k0_attention_append", Graph: g, InPlace: true}
		cases = append(cases, costCase{name: "append " + c.d.String(), k: k, t: plan.Target{SM: 80}, in: in,
			run: func(text string, l plan.Launch) *sim.Stats {
				sr := loadRun(t, text, k, l, in)
				st, err := sr.m.Launch(sr.entry, sr.cfg, sr.args...)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}})
	}
	for _, c := range []attnCase{gpt, gqa} {
		g := lseGraph(t, c, false)
		cases = append(cases, costCase{name: "lse " + c.String(), k: plan.Kernel{Name: "k0_attention_lse", Graph: g}, t: plan.Target{SM: 80}, in: inputsFor(g, 1)})
		for _, wrt := range []string{"q", "kv"} {
			g := attnGradGraph(t, c, wrt)
			cases = append(cases, costCase{name: "d" + wrt + " " + c.String(), k: plan.Kernel{Name: "k0_attention_grad", Graph: g}, t: plan.Target{SM: 80}, in: attnGradInputs(t, g, 1)})
		}
	}
	for _, c := range cases {
		text, launches, err := p.Module([]plan.Kernel{c.k}, c.t)
		if err != nil {
			t.Fatal(err)
		}
		ptxText, ptxLaunches, err := ptx.Module([]plan.Kernel{c.k}, c.t)
		if err != nil {
			t.Fatal(err)
		}
		exec := c.run
		if exec == nil {
			exec = func(text string, l plan.Launch) *sim.Stats {
				_, st := run(t, text, c.k, l, c.in)
				return st
			}
		}
		st, pst := exec(text, launches[0]), exec(ptxText, ptxLaunches[0])
		regs, pregs := assemble(t, text, []plan.Kernel{c.k}), assemble(t, ptxText, []plan.Kernel{c.k})
		t.Logf("%s: warp instructions nvvm %d, ptx %d (%.2f); sm_80 registers nvvm %d, ptx %d", c.name, st.WarpInsts, pst.WarpInsts,
			float64(st.WarpInsts)/float64(pst.WarpInsts), regs[c.k.Name]["sm_80"], pregs[c.k.Name]["sm_80"])
		if float64(st.WarpInsts) > 1.1*float64(pst.WarpInsts) {
			t.Errorf("%s: NVVM's entry executes %d warp instructions, codegen/ptx's %d", c.name, st.WarpInsts, pst.WarpInsts)
		}
	}
}
