package nvvm

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicConvFold: a convolution's weight gradient over a symbolic batch (the batch its
// input channels, read through views; symconv.go) is the NVVM producer's own (Lacks names
// nothing): the direct template with codegen/ptx's parameters (the taps at the run's batch),
// launch and work (one block along z); it assembles for sm_80 and sm_90 without spills, and on
// the memchecked, racechecked simulator at batch 1, a prime and the bound, the operands laid out
// at the run's batch, it equals the reference and codegen/ptx's entry bit for bit; a persistent
// kernel whose stage computes it (its size parameter the stage's taps) equals codegen/ptx's bit
// for bit and the reference within tolerance.
func TestSymbolicConvFold(t *testing.T) {
	p := requireProducer(t)
	const bound = 8
	for _, tc := range []struct {
		name, dt, attrs string
		img, kern, out  string // the image's H, W; the kernel's; the result's OH, OW
		taps            int    // per batch element
	}{
		{"f32, padding 1", "f32", "{padding=[1,1]}", "5,5", "5,5", "3,3", 25},
		{"f16, dilation 2", "f16", "{dilation=[2,2]}", "7,7", "3,3", "3,3", 9},
		{"bf16, stride 2, padding 1", "bf16", "{stride=[2,2], padding=[1,1]}", "6,6", "3,3", "3,3", 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf("graph k {\n  input %%x : %[1]s[{{batch}},2,%[2]s]\n  input %%dy : %[1]s[{{batch}},4,%[3]s]\n"+
				"  %%0 = transpose(%%x) {perm=[1,0,2,3]} : %[1]s[2,{{batch}},%[2]s]\n  %%1 = transpose(%%dy) {perm=[1,0,2,3]} : %[1]s[4,{{batch}},%[3]s]\n"+
				"  %%2 = conv2d(%%0, %%1) %[4]s : %[1]s[2,4,%[5]s]\n  output dw = %%2\n}\n", tc.dt, tc.img, tc.kern, tc.attrs, tc.out)
			g, sizes := dimsGraph(t, src, map[string]int64{"batch": bound})
			k := plan.Kernel{Name: "k0_conv", Graph: g, Symbolic: true, Rows: bound, Sizes: sizes}
			target := plan.Target{SM: 80}
			text, l, ptxText, pl := bothSymbolic(t, p, k, target)
			if n := len(l.Params); l.Params[n-1] != (plan.Arg{Kind: plan.ArgSize}) || l.Work.Scale != tc.taps || l.Work.Axis != 2 || l.Work.MaxBlocks != 1 {
				t.Errorf("params %v, work %+v: want the taps' size parameter last, %d per batch element, one block along z", l.Params, *l.Work, tc.taps)
			}
			assemble(t, text, []plan.Kernel{k})
			pk := plan.Kernel{Name: "k1_persistent", Graph: g, Stages: []plan.Kernel{{Name: "s0_conv", Graph: g, Symbolic: true, Rows: bound, Sizes: sizes}}}
			ptext, ppl, pptxText, ppl2 := bothEntries(t, p, pk, target)
			if n := len(ppl.Params); ppl.Params[n-1] != (plan.Arg{Kind: plan.ArgSize, Scale: tc.taps}) {
				t.Errorf("persistent params %v: want the stage's taps last, %d per batch element", ppl.Params, tc.taps)
			}
			assemble(t, ptext, []plan.Kernel{pk})
			for _, r := range []int64{1, 5, bound} {
				env := map[string]int64{"batch": r}
				gr, _ := dimsGraph(t, src, env)
				in := inputsFor(gr, uint64(r)+11)
				want, err := ref.Run(gr, in, nil)
				if err != nil {
					t.Fatal(err)
				}
				n := int(r) * tc.taps
				got, st := runDims(t, text, k, l, gr, in, env, n)
				emitted, pst := runDims(t, ptxText, k, pl, gr, in, env, n)
				if r == bound {
					// docs/perf.md's table.
					t.Logf("warp instructions at batch %d: nvvm %d, ptx %d", r, st.WarpInsts, pst.WarpInsts)
				}
				pgot, _ := runDims(t, ptext, pk, ppl, gr, in, env, n)
				pemitted, _ := runDims(t, pptxText, pk, ppl2, gr, in, env, n)
				if !bytes.Equal(pgot["dw"], pemitted["dw"]) {
					t.Errorf("dw at batch %d: the persistent kernel's differs from codegen/ptx's", r)
				}
				// A stage folds f32 products with an fma in f32 (plan.AccType): within tolerance.
				x, err := tensor.FromBytes(gr.Outputs[0].Value.Type, pgot["dw"])
				if err != nil {
					t.Fatal(err)
				}
				compare(t, fmt.Sprintf("the persistent kernel's dw at batch %d (reference)", r), x, want["dw"], false, gr.Outputs[0].Value.Type.DType, false, n)
				if !bytes.Equal(got["dw"], want["dw"].Bytes()) {
					t.Errorf("dw at batch %d: differs from the reference", r)
				}
				if !bytes.Equal(got["dw"], emitted["dw"]) {
					t.Errorf("dw at batch %d: differs from codegen/ptx's", r)
				}
			}
		})
	}
}
