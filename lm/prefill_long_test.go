package lm

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// TinyLlama's prefill at T = 8192 holds its 32 heads' scores, [1, 4, 65536, 8192] (the query
// heads grouped by KV head), 2^31 elements, until the attention pass replaces them: it builds, in
// f32 and under autocast to f16, with one attention kernel per layer and no buffer of scores in
// the memory plan; with the attention pass disabled a kernel would compute the scores, which no
// kernel indexes, and the build is one error naming the first layer's scores in the model.
func TestTinyLlamaPrefill8192(t *testing.T) {
	const T, heads, layers = 8192, 32, 22
	g, err := prefillAt(benchConfigs[1].c, T)
	if err != nil {
		t.Fatal(err)
	}
	for _, amp := range []ir.DType{ir.Invalid, ir.F16} {
		res, err := passes.Run(g, passes.Options{AMP: amp})
		if err != nil {
			t.Fatalf("autocast %v: %v", amp, err)
		}
		attention := 0
		for _, k := range res.Kernels.Kernels {
			if k.Kind == passes.Attention && countOp(k, ops.AttentionOp) == 1 {
				attention++
			}
		}
		if attention != layers {
			t.Errorf("autocast %v: %d attention kernels, want %d", amp, attention, layers)
		}
		// The plan's buffers by name: none holds one head's T×T scores, and none is over the
		// limit a kernel indexes.
		placed := map[string]bool{}
		for _, b := range res.Plan.Buffers {
			placed[b.Name] = true
		}
		for _, b := range res.Kernels.Buffers {
			sh := b.Type.Shape
			if !placed[b.Name] && b.Kind != passes.OutputBuffer {
				continue
			}
			if len(sh) >= 2 && sh[len(sh)-1] == T && sh[len(sh)-2] >= T || sh.NumElements() > ir.MaxElements {
				t.Errorf("autocast %v: the plan holds %s %s : %s", amp, b.Kind, b.Name, b.Type)
			}
		}
		if len(placed) == 0 {
			t.Errorf("autocast %v: the memory plan places no buffer", amp)
		}
	}
	_, err = passes.Run(g, passes.Options{DisablePasses: []string{"attention"}})
	want := "pass memplan: model.go:156: %58 = dot_general(%56, %57) {lhs_batch=[0,1], lhs_contract=[3], rhs_batch=[0,1], rhs_contract=[2]} : f32[1,4,65536,8192]: kernel "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "would compute it: its dimensions multiply to 2147483648, and a tensor holds at most 2147483647 (2^31-1) elements in memory") {
		t.Errorf("attention disabled: err = %v\nwant %s...", err, want)
	}
}

// countOp counts k's ops named op.
func countOp(k *passes.Kernel, op string) int {
	n := 0
	for _, v := range k.Body.Values {
		if v.Op == op {
			n++
		}
	}
	return n
}
