package passes_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// A linear layer over int8 or int4 weights: with at most 8 rows the dequantize joins the GEMV
// kernel, which reads the integer weight (one kernel per run, its bytes within 1.2× the integer
// weight's). With more rows and f16/bf16 operands it joins the tensor-core GEMM (codegen/qmma).
// Both also take an f32 dequantize cast to bf16 or f16 (autocast's weight): one kernel, which
// reads the integers. With more rows in f32 it is a kernel of its own, per run like the product. In
// every case the device holds the integers only and no bind-time kernel writes a float copy.
func TestQuantizedLinear(t *testing.T) {
	const n, k = 512, 1024
	cases := []struct {
		m, bits, group int
		dt             ir.DType // x's and the scales'
		cast           ir.DType // set: f32 scales, the dequantize cast to it
		kernels        int
	}{
		{1, 8, k, ir.F32, 0, 1}, {8, 8, k, ir.F32, 0, 1}, {1, 4, 128, ir.F32, 0, 1}, {4, 4, 32, ir.F32, 0, 1},
		{9, 8, k, ir.F32, 0, 2}, {64, 4, 128, ir.F32, 0, 2},
		{9, 8, k, ir.F16, 0, 1}, {64, 4, 128, ir.BF16, 0, 1}, {128, 4, 32, ir.F16, 0, 1},
		{64, 4, 128, ir.F32, ir.BF16, 1}, {16, 8, 64, ir.F32, ir.F16, 1},
		{4, 4, 128, ir.F32, ir.BF16, 1}, {1, 8, k, ir.F32, ir.F16, 1},
	}
	for _, c := range cases {
		name := fmt.Sprintf("m%d_int%d_g%d_%s", c.m, c.bits, c.group, c.dt)
		if c.cast != 0 {
			name += "_cast_" + c.cast.String()
		}
		t.Run(name, func(t *testing.T) {
			qt := ir.T(ir.I8, n, k)
			if c.bits == 4 {
				qt = ir.T(ir.U8, n, k/2)
			}
			r := runChecked(t, "qlinear", func(b *frontend.Builder) {
				xt := c.dt
				if c.cast != 0 {
					xt = c.cast
				}
				x := b.Input("x", xt, c.m, k)
				q := b.Param("q", qt, frontend.Zeros())
				s := b.Param("s", ir.T(c.dt, n, k/c.group), frontend.Constant(0.01))
				w := frontend.Dequantize(q, s, nil, frontend.Quant{Bits: c.bits, Group: c.group, Axis: 1})
				if c.cast != 0 {
					w = w.Cast(c.cast)
				}
				b.Output("y", frontend.Linear(x, w, b.Param("b", ir.T(xt, n), frontend.Zeros())))
			})
			st := r.Stats
			if st.Kernels != c.kernels || st.BindKernels != 0 {
				t.Fatalf("%d kernels per run and %d bind-time, want %d and 0", st.Kernels, st.BindKernels, c.kernels)
			}
			// Every buffer read is the input, the integer weight, its scales, the bias or a
			// planned intermediate of the weight's dequantization (large M): never a
			// parameter-sized float copy written at bind time.
			intBytes := int64(qt.Shape.NumElements())
			var readsQ bool
			for _, kern := range r.Kernels.Kernels {
				for _, b := range kern.Reads {
					readsQ = readsQ || b.Name == "q"
					if c.kernels == 1 && b.Name != "x" && b.Name != "q" && b.Name != "s" && b.Name != "b" {
						t.Errorf("kernel %s reads %s", kern.Name, b.Name)
					}
				}
			}
			if !readsQ {
				t.Errorf("no kernel reads the integer weight q")
			}
			// The case: one row, per-channel int8.
			if c.m == 1 && c.bits == 8 && float64(st.DRAMBytes) > 1.2*float64(intBytes) {
				t.Errorf("%d DRAM bytes per run, more than 1.2× the %d bytes of integer weights", st.DRAMBytes, intBytes)
			}
		})
	}
}

// The kernel graphs and cost reports of an int4 linear layer (groups of 32, zero points, f16)
// at 1 and 16 rows are pinned in testdata/quant/int4_linear.txtar (go test -update rewrites
// it): the dequantize inside the GEMV kernel at 1 row, inside the tensor-core GEMM at 16.
func TestQuantizedLinearGolden(t *testing.T) {
	var files []txtar.File
	for _, m := range []int{1, 16} {
		g, err := frontend.Build("int4_linear", func(b *frontend.Builder) {
			x := b.Input("x", ir.F16, m, 256)
			w := frontend.Dequantize(b.Param("q", ir.T(ir.U8, 64, 128), frontend.Zeros()), b.Param("s", ir.T(ir.F16, 64, 8), frontend.Zeros()),
				b.Param("z", ir.T(ir.U8, 64, 8), frontend.Zeros()), frontend.Quant{Bits: 4, Group: 32, Axis: 1})
			b.Output("y", frontend.Linear(x, w, b.Param("b", ir.T(ir.F16, 64), frontend.Zeros())).Relu())
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := passes.Run(g, passes.Options{VerifyEach: true})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, txtar.File{Name: fmt.Sprintf("m%d/kernels.txt", m), Data: []byte(res.Kernels.String())},
			txtar.File{Name: fmt.Sprintf("m%d/stats.json", m), Data: res.Stats.JSON()})
	}
	golden.CheckTxtar(t, filepath.Join("testdata", "quant", "int4_linear.txtar"), "An int4 linear layer (x·dequantize(q, s, z)ᵀ + b, relu) at 1 and 16 rows: kernel graphs and cost reports.\n", files)
}
