package ptx

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// lseTolerance bounds the error of a log-sum-exp element w: f32 sums of exact 16-bit products,
// ex2.approx and lg2.approx against float64; under tf32, q and k rounded to 10-bit mantissas move
// every score, and the LSE (a weighted mean of the scores' moves) with them, by up to about
// tf32's relative bound times the row's largest score.
func lseTolerance(w float64, tf32 bool) float64 {
	if tf32 {
		rel, _ := tolerance.Tolerance(ir.F32, true, 0)
		return rel * (1 + math.Abs(w))
	}
	return 2e-5 * (1 + math.Abs(w))
}

// checkLSE compares a kernel's log-sum-exp rows with the reference's: within lseTolerance, −inf
// exactly where a row sees no key.
func checkLSE(t *testing.T, got, want *tensor.Tensor, tf32 bool) {
	t.Helper()
	bad := 0
	for i, w := range want.F {
		g := got.F[i]
		if math.IsInf(w, -1) && g == w || math.Abs(g-w) <= lseTolerance(w, tf32) {
			continue
		}
		if bad < 5 {
			t.Errorf("lse[%d] = %g, want %g", i, g, w)
		}
		bad++
	}
}

// TestAttentionMMALSE runs the tensor-core template of a kernel writing attention's result and
// its rows' log-sum-exp (the forward of a train step, whose backward reads the LSE) on the
// simulator (memcheck, racecheck, barrier checks; ptxas sm_80 and sm_90 without spills) over the
// tensor-core tables, f16/bf16 and f32 under tf32: head dims 64 to 128, causal, position masks
// with rows that see no key (−inf), grouped KV heads, ragged L and S, additive bias. The LSE
// matches ops' float64 attention_lse and o stays within the forward's bounds; the outputs may
// come in either order.
func TestAttentionMMALSE(t *testing.T) {
	type lseCase struct {
		attnCase
		tf32, swap bool
	}
	var cases []lseCase
	for _, c := range attnMMACases {
		cases = append(cases, lseCase{c, false, false})
	}
	for _, c := range attnTF32Cases {
		cases = append(cases, lseCase{c, true, false})
	}
	cases = append(cases, lseCase{attnMMACases[1], false, true}, lseCase{attnTF32Cases[5], true, true})
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s_tf32%v_swap%v", c.attnCase, c.tf32, c.swap), func(t *testing.T) {
			// sequential: harnessTarget is the package's
			if c.tf32 {
				harnessTarget = Target{SM: 80, TF32: true}
				t.Cleanup(func() { harnessTarget = Target{SM: 80} })
			}
			g := lseGraph(t, c.attnCase, true)
			if c.swap {
				slices.Reverse(g.Outputs)
			}
			in := attnInputs(g, 3, c.pos)
			res := runKernel(t, Kernel{Name: "k0_attention", Graph: g}, in)
			want, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkLSE(t, res.out["lse"], want["lse"], c.tf32)
			if c.tf32 {
				rel, _ := tolerance.Tolerance(ir.F32, true, 0)
				checkAttentionWithin(t, res.out["o"], want["o"], rel)
			} else {
				checkAttention(t, res.out["o"], want["o"])
			}
			for _, s := range []string{"mma.sync", "lg2.approx.f32"} {
				if !strings.Contains(res.ptx, s) {
					t.Errorf("the kernel has no %s", s)
				}
			}
			t.Logf("registers %v", res.regs)
		})
	}
}

// TestAttentionMMALSEScale: the LSE of a scale the template does not fold into the exponent
// (scores scaled first: zero, negative, so small that the bias's 1/scale would overflow f32) and
// of a folded one.
func TestAttentionMMALSEScale(t *testing.T) {
	for _, scale := range []float64{-0.2, 0, 1e-39, 0.5} {
		c := attnCase{1, 2, 2, 30, 70, 64, 64, ops.MaskCausal, []int{1, 1, 30, 70}, nil, ir.F16}
		t.Run(fmt.Sprintf("scale%g", scale), func(t *testing.T) {
			t.Parallel()
			g := lseGraph(t, c, true)
			for _, o := range g.Outputs {
				o.Value.Attrs["scale"] = scale
			}
			in := attnInputs(g, 3, nil)
			res := runKernel(t, Kernel{Name: "k0_attention", Graph: g}, in)
			want, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkLSE(t, res.out["lse"], want["lse"], false)
			checkAttention(t, res.out["o"], want["o"])
		})
	}
}

// TestAttentionMMAGolden pins the tensor-core template's text: without an attention_lse output
// (f16 causal, bf16 grouped with a bias, f32 on tf32 under a position mask) it is the text the
// NVVM producer's port matches bit for bit, which writing the LSE must not move; with one, the
// LSE's store is added at the end.
func TestAttentionMMAGolden(t *testing.T) {
	var files []txtar.File
	for _, c := range []struct {
		name string
		c    attnCase
		tf32 bool
		lse  bool
	}{
		{"f16_causal", attnCase{1, 2, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F16}, false, false},
		{"bf16_gqa_bias", attnCase{1, 4, 2, 65, 65, 64, 64, ops.MaskNone, []int{1, 4, 65, 65}, nil, ir.BF16}, false, false},
		{"tf32_position", attnCase{2, 2, 1, 16, 40, 64, 64, ops.MaskPosition, nil, nil, ir.F32}, true, false},
		{"f16_causal_lse", attnCase{1, 2, 2, 70, 70, 64, 64, ops.MaskCausal, nil, nil, ir.F16}, false, true},
		{"tf32_position_lse", attnCase{2, 2, 1, 16, 40, 64, 64, ops.MaskPosition, nil, nil, ir.F32}, true, true},
	} {
		var g *ir.Graph
		if c.lse {
			g = lseGraph(t, c.c, true)
		} else {
			g = attentionGraph(t, c.c.d, c.c.b, c.c.h, c.c.kvh, c.c.l, c.c.s, c.c.e, c.c.ev, c.c.mask, c.c.bias)
		}
		entry, _, err := Generate(Kernel{Name: "k0_attention", Graph: g}, Target{SM: 80, TF32: c.tf32})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !strings.Contains(entry, "mma.sync") || strings.Contains(entry, "lg2.approx") != c.lse {
			t.Errorf("%s: want the tensor-core template, lg2.approx %v", c.name, c.lse)
		}
		files = append(files, txtar.File{Name: c.name + ".ptx", Data: []byte(entry)})
	}
	golden.CheckTxtar(t, filepath.Join("testdata", "attention_mma.txtar"), "The tensor-core attention template's entries without and with the rows' log-sum-exp (TestAttentionMMAGolden).\n", files)
}
