package lm

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/internal/lmtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// Under --dtype f16 and bf16 the quantized tiny Llama's products read the integers: the decode
// step launches as many kernels as the float model's under the same dtype (its GEMVs dequantize
// in registers: under f16 with the scales cast once at bind time, under bf16 reading the cast of
// the f32 dequantize; before, each dequantize and its cast was a kernel of its own: 30 against
// 26), and the prefill of 32 tokens under both dtypes has no per-run
// kernel that dequantizes apart from its product and none that writes a float weight (the
// tensor-core GEMM dequantizes its B fragments in registers, codegen/qmma).
func TestQuantizedLowPrecisionKernels(t *testing.T) {
	tiny := Config{Arch: "llama", Vocab: 320, Hidden: 64, Intermediate: 96, Layers: 2, Heads: 4, KVHeads: 2, MaxSeq: 64, NormEps: 1e-5, RopeTheta: 10000}
	for _, q := range []QuantConfig{{8, -1}, {4, 32}} {
		c := tiny
		c.Quant = q
		name := fmt.Sprintf("int%d_g%d", q.Bits, q.GroupSize)
		compile := func(program string, T int, dt ir.DType) *passes.Result {
			c := c
			if program == "float decode" {
				program, c.Quant = "decode", QuantConfig{}
			}
			g, err := ProgramGraph(c, program, 1, T)
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{AMP: dt})
			if err != nil {
				t.Fatalf("%s %s %s: %v", name, program, dt, err)
			}
			return res.Passes
		}
		for _, dt := range []ir.DType{ir.F16, ir.BF16} {
			float, quant := compile("float decode", 1, dt), compile("decode", 1, dt)
			if quant.Stats.Kernels != float.Stats.Kernels {
				t.Errorf("%s: the %s decode step launches %d kernels, the float model's %d", name, dt, quant.Stats.Kernels, float.Stats.Kernels)
			}
		}
		for _, dt := range []ir.DType{ir.F16, ir.BF16} {
			res := compile("prefill", 32, dt)
			for _, k := range res.Kernels.Kernels {
				if k.BindTime {
					continue
				}
				var dq, dot bool
				for _, v := range k.Body.Values {
					dq = dq || v.Op == ops.DequantizeOp
					dot = dot || v.Op == "dot_general"
				}
				if dq && !dot {
					t.Errorf("%s %s prefill: kernel %s dequantizes apart from the product", name, dt, k.Name)
				}
				for _, o := range k.Body.Outputs {
					if v := o.Value; v.Op == ops.DequantizeOp || v.Op == "cast" && v.Args[0].Op == ops.DequantizeOp {
						t.Errorf("%s %s prefill: kernel %s writes a float weight %s", name, dt, k.Name, v.Type)
					}
				}
			}
		}
	}
}

// The quantized tiny Llama under --dtype f16 and bf16 gives on the simulator the logits the
// reference computes from the same autocast graph, for a prompt of 24 tokens (the prefill's
// products take the quantized tensor-core GEMM) and 2 decode steps (the GEMVs), within the
// 16-bit dtype's rounding of the activations (8 units of the dtype of the largest).
func TestQuantizedLowPrecisionLogits(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates two prefills of 24 tokens")
	}
	r := reference(t)
	c := &r.Cases[1] // llama, f32: hidden 64, intermediate 96
	src := t.TempDir()
	if err := lmtest.WriteFolder(src, c, 1); err != nil {
		t.Fatal(err)
	}
	prompt := make([]int, 24)
	for i := range prompt {
		prompt[i] = c.Prompt[i%len(c.Prompt)]
	}
	for _, q := range []struct {
		bits, group int
		sym         bool
		dt          ir.DType
	}{{4, 32, false, ir.F16}, {8, -1, true, ir.BF16}} {
		name := fmt.Sprintf("int%d_g%d_%s", q.bits, q.group, q.dt)
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			if _, err := checkpoint.WriteQuantized(src, mkdir(t, dir), q.bits, q.group, q.sym); err != nil {
				t.Fatal(err)
			}
			m, _, err := LoadCheckpoint(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			var logits [2][][]float32
			for i, dev := range []string{"ref", "sim"} {
				e, err := m.Open(EngineOptions{Device: dev, NoSimChecks: true, Compiler: compiler.Options{AMP: q.dt}})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				ctx := context.Background()
				l, err := e.Prefill(ctx, [][]int{prompt})
				if err != nil {
					t.Fatal(err)
				}
				logits[i] = append(logits[i], l[0])
				for k := range 2 {
					if l, err = e.Decode(ctx, []int{c.Steps[k].Argmax}, []int{len(prompt) + k}); err != nil {
						t.Fatal(err)
					}
					logits[i] = append(logits[i], l[0])
				}
			}
			for k := range logits[0] {
				d := maxRelDiff(logits[1][k], logits[0][k])
				t.Logf("step %d: %.3g", k, d)
				// Attention runs in the low dtype: the kernel (online softmax, ex2.approx) and the
				// reference (float64, rounded once) round its output apart by about one unit of the
				// dtype, which two layers carry to the logits: 8 units (2⁻¹¹ for f16, 2⁻⁸ for bf16).
				if tol := 8 * map[ir.DType]float64{ir.F16: 0x1p-11, ir.BF16: 0x1p-8}[q.dt]; d > tol {
					t.Errorf("step %d: the simulator's logits differ from the reference's by %.3g of the largest", k, d)
				}
			}
		})
	}
}
