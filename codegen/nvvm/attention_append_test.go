package nvvm

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// appendGraph is a decoding step's attention over caches it appends to, as the passes' appendkv
// hands it to the template (codegen/ptx's test graph): update_slice(cache, rows, pos) {axis=2}
// for K (its rows read through a transpose of [B, T, KVH, E]) and V, attention over the results.
func appendGraph(t *testing.T, d, posType ir.DType, b, h, kvh, l, s, e int) *ir.Graph {
	t.Helper()
	g, err := ir.Parse("append.gir", []byte(fmt.Sprintf(`graph g {
  input %%q : %[1]s[%[2]d,%[3]d,%[5]d,%[7]d]
  input %%knew : %[1]s[%[2]d,%[5]d,%[4]d,%[7]d]
  input %%vnew : %[1]s[%[2]d,%[4]d,%[5]d,%[7]d]
  input %%kc : %[1]s[%[2]d,%[4]d,%[6]d,%[7]d]
  input %%vc : %[1]s[%[2]d,%[4]d,%[6]d,%[7]d]
  input %%pos : %[8]s[%[2]d]
  %%0 = transpose(%%knew) {perm=[0,2,1,3]} : %[1]s[%[2]d,%[4]d,%[5]d,%[7]d]
  %%1 = update_slice(%%kc, %%0, %%pos) {axis=2} : %[1]s[%[2]d,%[4]d,%[6]d,%[7]d]
  %%2 = update_slice(%%vc, %%vnew, %%pos) {axis=2} : %[1]s[%[2]d,%[4]d,%[6]d,%[7]d]
  %%3 = attention(%%q, %%1, %%2, %%pos) {mask="position", scale=%[9]g} : %[1]s[%[2]d,%[3]d,%[5]d,%[7]d]
  output o = %%3
  output k = %%1
  output v = %%2
}`, d, b, h, kvh, l, s, e, posType, 1/math.Sqrt(float64(e)))))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAttentionAppendKernel runs codegen/ptx's table of the split-KV template appending the
// step's K and V rows to its caches in place through the NVVM producer: its own entry (libNVVM
// compiles it; ptxas sm_80 and sm_90 without spills), whose attention output is within the
// template's tolerance of the reference and whose caches are the reference's bit for bit, under
// every block order with the race check between the blocks on, all three outputs bit for bit
// codegen/ptx's entry's, with codegen/ptx's launch.
func TestAttentionAppendKernel(t *testing.T) {
	p := requireProducer(t)
	for _, c := range []struct {
		d, posType         ir.DType
		b, h, kvh, l, s, e int
		pos                []int64
	}{
		{ir.F32, ir.I64, 1, 4, 4, 1, 200, 64, []int64{0}},       // the first key: the new row alone
		{ir.F32, ir.I64, 1, 4, 4, 1, 200, 64, []int64{97}},      // a middle one
		{ir.F32, ir.I64, 1, 4, 4, 1, 200, 64, []int64{199}},     // the last key
		{ir.F32, ir.I32, 2, 4, 4, 1, 150, 64, []int64{3, 148}},  // entries at different positions
		{ir.F32, ir.I64, 2, 8, 2, 1, 130, 64, []int64{129, 40}}, // GQA, 4 query heads per KV head
		{ir.F32, ir.I64, 1, 4, 2, 2, 100, 32, []int64{50}},      // two query rows and two appended
		{ir.F32, ir.I64, 1, 2, 2, 1, 64, 64, []int64{70}},       // past the cache: the last row, clamped
		{ir.F32, ir.I64, 2, 2, 1, 1, 20, 64, []int64{19, 0}},    // S < one chunk: no split
		{ir.F32, ir.I64, 1, 2, 2, 1, 64, 64, []int64{-5}},       // below the cache: the first row, clamped
		{ir.F16, ir.I64, 1, 4, 4, 1, 200, 64, []int64{120}},     //
		{ir.F16, ir.I32, 2, 8, 2, 1, 256, 64, []int64{0, 255}},  // GQA, the first and last keys
		{ir.F16, ir.I64, 1, 4, 1, 1, 96, 40, []int64{31}},       // MQA, 40 columns: element by element
		{ir.BF16, ir.I32, 1, 2, 2, 3, 80, 64, []int64{40}},      // three appended rows
	} {
		name := fmt.Sprintf("%s_%s_B%d_H%d_KVH%d_L%d_S%d_E%d_pos%v", c.d, c.posType, c.b, c.h, c.kvh, c.l, c.s, c.e, c.pos)
		t.Run(name, func(t *testing.T) {
			g := appendGraph(t, c.d, c.posType, c.b, c.h, c.kvh, c.l, c.s, c.e)
			in := inputsFor(g, 5)
			for i, pos := range c.pos {
				in["pos"].I[i] = pos
			}
			k := plan.Kernel{Name: "k0_attention_append", Graph: g, InPlace: true}
			text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if launches[0].Producer == "ptx" {
				t.Fatalf("codegen/ptx's entry, want the NVVM producer's own (notes %q)", launches[0].Notes)
			}
			regs := assemble(t, text, []plan.Kernel{k})
			ptxText, ptxLaunches, err := ptx.Module([]plan.Kernel{k}, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			if pl, l := ptxLaunches[0], launches[0]; fmt.Sprint(pl.Grid, pl.Block, pl.Params) != fmt.Sprint(l.Grid, l.Block, l.Params) {
				t.Errorf("launch %v %v %v, codegen/ptx's %v %v %v", l.Grid, l.Block, l.Params, pl.Grid, pl.Block, pl.Params)
			}
			want, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			emitted := runAppend(t, ptxText, k, ptxLaunches[0], in, sim.InOrder)
			for _, order := range []sim.BlockOrder{sim.InOrder, sim.Reverse, sim.RandomOrder} {
				got := runAppend(t, text, k, launches[0], in, order)
				if order == sim.InOrder {
					checkAttention(t, got["o"], want["o"])
					for _, name := range []string{"k", "v"} {
						if string(got[name].Bytes()) != string(want[name].Bytes()) {
							t.Errorf("cache %s differs from the reference's", name)
						}
					}
				}
				for name, x := range got {
					if string(x.Bytes()) != string(emitted[name].Bytes()) {
						t.Errorf("%v: %s differs from codegen/ptx's", order, name)
					}
				}
			}
			t.Logf("registers %v, grid %v", regs, launches[0].Grid)
		})
	}
}

// TestAttentionAppendRefused: the NVVM producer appends only to a cache that is its output's
// memory and that the kernel writes; otherwise the module is refused with codegen/ptx's error.
func TestAttentionAppendRefused(t *testing.T) {
	p := requireProducer(t)
	g := appendGraph(t, ir.F32, ir.I64, 1, 2, 2, 1, 64, 64)
	unwritten := appendGraph(t, ir.F32, ir.I64, 1, 2, 2, 1, 64, 64)
	unwritten.Outputs = unwritten.Outputs[:1] // the caches' updates computed, not written
	for _, c := range []struct {
		name string
		k    plan.Kernel
		want string
	}{
		{"not in place", plan.Kernel{Name: "k0_attention_append", Graph: g}, "not in place"},
		{"caches not written", plan.Kernel{Name: "k0_attention_append", Graph: unwritten, InPlace: true}, "does not write"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if borrowed(c.k, plan.Target{SM: 80}) {
				t.Fatal("borrowed: want the NVVM producer's own template")
			}
			if _, _, err := p.Module([]plan.Kernel{c.k}, plan.Target{SM: 80}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want the kernel refused: %q", err, c.want)
			}
		})
	}
}

// runAppend launches an appending attention kernel on a fresh device with each cache output
// bound to its cache input's memory (the plan's in_place_of), blocks in the given order with the
// race check between them on, and returns the attention's output and the caches after it.
func runAppend(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, order sim.BlockOrder) map[string]*tensor.Tensor {
	t.Helper()
	sr := loadRun(t, text, k, l, in)
	cacheOf := map[string]string{"k": "kc", "v": "vc"}
	inputAt := map[string]uint64{}
	for i, a := range l.Params {
		if a.Kind == plan.ArgInput {
			inputAt[a.Name] = sr.args[i].(uint64)
		}
	}
	for i, a := range l.Params {
		if c, ok := cacheOf[a.Name]; ok && a.Kind == plan.ArgOutput {
			sr.args[i], sr.outAddr[a.Name] = inputAt[c], inputAt[c]
		}
	}
	cfg := sr.cfg
	cfg.Order, cfg.Seed, cfg.RaceGlobal = order, 3, true
	if _, err := sr.m.Launch(sr.entry, cfg, sr.args...); err != nil {
		t.Fatalf("launch (%v): %v", order, err)
	}
	sr.checkScratch(t, true)
	_, out := sr.read(t)
	return out
}
