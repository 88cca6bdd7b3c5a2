package train

import (
	"testing"

	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/examples/transformer"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/tensor"
)

// The transformer and gpt examples' train steps (an MSE loss on their output) form their
// attention before differentiation, one op per layer, and train as the steps that differentiate
// the decomposition do, within f32's rounding, over two Adam steps. gpt's fused step has no
// buffer of [heads, T, T] scores in its memory plan (the backward recomputes them in its
// kernels), where the unfused step has them (the transformer's head dim is its T: its o is
// [B, heads, T, T] too).
func TestExampleStepsFusedAttention(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the examples' train steps on the reference interpreter")
	}
	for _, ex := range []struct {
		name  string
		model func(*frontend.Builder)
		attn  int
		heads int // and T, when the example's scores can be told from its other buffers
		t     int
	}{{"transformer", transformer.Model, 1, 0, 0}, {"gpt", gpt.Model, gpt.NLayer, gpt.NHead, gpt.SeqLen}} {
		t.Run(ex.name, func(t *testing.T) {
			fwd, err := frontend.Build(ex.name, ex.model)
			if err != nil {
				t.Fatal(err)
			}
			g, err := WithLoss(fwd, Loss{Name: MSELoss}, frontend.ReductionMean)
			if err != nil {
				t.Fatal(err)
			}
			run := func(o Options) *Result {
				s, err := StepFromGraph(g, NewAdam(), o)
				if err != nil {
					t.Fatal(err)
				}
				n, ng := 0, 0
				for _, v := range s.Graph.Values {
					n += btoi(v.Op == ops.AttentionOp)
					ng += btoi(v.Op == ops.AttentionGradOp)
				}
				if want := ex.attn * btoi(!o.UnfusedAttention); n != want || ng != 3*want {
					t.Fatalf("UnfusedAttention %v: %d attention and %d attention_grad ops, want %d and %d", o.UnfusedAttention, n, ng, want, 3*want)
				}
				// The compiled step's cost report, for docs/perf.md (go test ./train -run
				// TestExampleStepsFusedAttention -v).
				res, err := passes.Run(s.Graph, passes.Options{ParamsChangeEveryRun: true})
				if err != nil {
					t.Fatal(err)
				}
				if n, b := scoreBuffers(res.Kernels, ex.heads, ex.t); ex.t > 0 && o.UnfusedAttention != (n > 0) {
					t.Errorf("UnfusedAttention %v: %d buffers of [heads, T, T] scores or more in the memory plan (%s)", o.UnfusedAttention, n, b)
				}
				st := res.Stats
				t.Logf("%s step, UnfusedAttention %v: %d kernels, %d DRAM bytes, arena %d bytes, %.1f µs modeled",
					ex.name, o.UnfusedAttention, st.Kernels, st.DRAMBytes, st.ArenaBytes, st.ModeledTimeUS)
				params, err := InitParams(s.Graph, 5)
				if err != nil {
					t.Fatal(err)
				}
				r, err := RunRef(s, params, 2, func(i int) (map[string]*tensor.Tensor, error) {
					m := map[string]*tensor.Tensor{}
					for _, v := range g.Inputs() {
						m[v.Name] = tensor.RandomInput(v, uint64(20+i))
					}
					return m, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			sameTraining(t, run(Options{}), run(Options{UnfusedAttention: true}), 1e-4)
		})
	}
}

// scoreBuffers counts the buffers kernels of kg write that end in [T, T] and hold heads·T·T
// elements or more, the scores the fused backward never materializes, and names one.
func scoreBuffers(kg *passes.KernelGraph, h, l int) (n int, name string) {
	for _, b := range kg.Buffers {
		s := b.Type.Shape
		if b.Writer != nil && len(s) >= 2 && s[len(s)-1] == l && s[len(s)-2] == l && s.NumElements() >= h*l*l {
			n, name = n+1, b.Name+" "+b.Type.String()
		}
	}
	return n, name
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
