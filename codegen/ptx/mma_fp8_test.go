package ptx

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// fp8GEMMCase is a dot_general of an fp8 lhs [batch..., M, K] (or [K, M] with kmaj) and an fp8
// rhs [K, N] (or [N, K] with nk), f16 result, with an optional scale tail: "tensor" (one f16
// scale) or "row" (an f16 scale per row).
type fp8GEMMCase struct {
	batch, m, n, k int
	a, b           ir.DType
	kmaj, nk       bool
	tail           string
}

func (c fp8GEMMCase) String() string {
	return fmt.Sprintf("%s_%s_B%d_M%d_N%d_K%d_kmaj%v_nk%v_%s", c.a, c.b, c.batch, c.m, c.n, c.k, c.kmaj, c.nk, c.tail)
}

func (c fp8GEMMCase) graph(t *testing.T) *ir.Graph {
	var pre []int
	if c.batch > 0 {
		pre = []int{c.batch}
	}
	r := len(pre)
	as, bs := append(append([]int{}, pre...), c.m, c.k), append(append([]int{}, pre...), c.k, c.n)
	lc, rc := r+1, r
	if c.kmaj {
		as, lc = append(append([]int{}, pre...), c.k, c.m), r
	}
	if c.nk {
		bs, rc = append(append([]int{}, pre...), c.n, c.k), r+1
	}
	out := append(append([]int{}, pre...), c.m, c.n)
	batch := ""
	if c.batch > 0 {
		batch = ", lhs_batch=[0], rhs_batch=[0]"
	}
	src := fmt.Sprintf(`graph fp8gemm {
  input %%a: %s%s
  input %%b: %s%s
  input %%s: f16%s
  %%d = dot_general(%%a, %%b) {lhs_contract=[%d], rhs_contract=[%d]%s}: f16%s
`, c.a, shapeText(as), c.b, shapeText(bs), map[string]string{"": "[]", "tensor": "[]", "row": shapeText([]int{c.m})}[c.tail], lc, rc, batch, shapeText(out))
	switch c.tail {
	case "":
		src += "  output y = %d\n}"
	default:
		dims := "[]"
		if c.tail == "row" {
			dims = fmt.Sprintf("[%d]", r)
		}
		src += fmt.Sprintf("  %%sb = broadcast_in_dim(%%s) {shape=%s, dims=%s}: f16%s\n  %%y = mul(%%d, %%sb): f16%s\n  output y = %%y\n}",
			shapeText(out), dims, shapeText(out), shapeText(out))
	}
	return parse(t, src)
}

// TestFP8GEMM runs fp8 products on the tensor-core template's m16n8k32 .e4m3/.e5m2 mma (sm_90 on
// the simulator; ptxas 12.4 assembles the PTX 8.4 module for sm_89 and sm_90 without spills)
// against the reference within the f32 accumulation's bound (internal/tolerance): both kinds
// (the op table gives both operands one dtype), M, N and K not multiples of the tile or the k
// step (odd K copies element by element; K = 0 gives zeros), operands stored k-contiguous
// (fragments by ldmatrix) or not (byte gathers), a batch, and per-tensor and per-row scales fused
// as the epilogue, without shared-memory bank conflicts (fp8RowPad). The operands stay one byte
// wide: no f16 copy, no fp8 conversion.
func TestFP8GEMM(t *testing.T) {
	cases := []fp8GEMMCase{
		{0, 128, 128, 64, ir.F8E4M3, ir.F8E4M3, false, false, ""},
		{0, 67, 45, 100, ir.F8E5M2, ir.F8E5M2, false, true, ""},
		{0, 33, 130, 37, ir.F8E4M3, ir.F8E4M3, false, false, "row"},
		{0, 16, 8, 32, ir.F8E5M2, ir.F8E5M2, true, false, "tensor"},
		{0, 200, 24, 200, ir.F8E4M3, ir.F8E4M3, true, true, "row"},
		{3, 40, 24, 96, ir.F8E5M2, ir.F8E5M2, false, true, "tensor"},
		{0, 5, 7, 3, ir.F8E5M2, ir.F8E5M2, false, false, ""},
		{0, 20, 9, 0, ir.F8E4M3, ir.F8E4M3, false, false, "row"},
	}
	var kernels []Kernel
	for i, c := range cases {
		kernels = append(kernels, Kernel{Name: fmt.Sprintf("k%d_fp8gemm", i), Graph: c.graph(t)})
	}
	text, launches, err := Module(kernels, Target{SM: 90})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, ".version 8.4\n.target sm_90\n") {
		t.Errorf("sm_90 module header:\n%s", text[:200])
	}
	for _, bad := range []string{"cvt.rn.f16x2.e", "ld.global.u16", "m16n8k16"} {
		if strings.Contains(text, bad) {
			t.Errorf("the fp8 GEMM has %s: it widens its operands", bad)
		}
	}
	text89, _, err := Module(kernels, Target{SM: 89})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text89, ".version 8.4\n.target sm_89\n") {
		t.Errorf("sm_89 module header:\n%s", text89[:200])
	}
	ptxas.Require12(t)
	for arch, m := range map[string]string{"sm_90": text, "sm_89": text89} {
		r, err := ptxas.Assemble12([]byte(m), arch)
		if err != nil {
			t.Fatalf("ptxas 12.4 -arch=%s: %v", arch, err)
		}
		for _, ki := range r.Kernels {
			if ki.SpillStores != 0 || ki.SpillLoads != 0 || ki.StackBytes != 0 {
				t.Errorf("%s %s: spills %d/%d bytes, stack %d", arch, ki.Name, ki.SpillStores, ki.SpillLoads, ki.StackBytes)
			}
		}
	}
	for i, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			k := kernels[i]
			entry, _, err := Generate(k, Target{SM: 90})
			if err != nil {
				t.Fatal(err)
			}
			inst := "mma.sync.aligned.m16n8k32.row.col.f32." + fp8Kind(c.a) + "." + fp8Kind(c.b) + ".f32"
			if !strings.Contains(entry, inst) {
				t.Errorf("the kernel has no %s", inst)
			}
			if c.kmaj || !c.nk {
				if !strings.Contains(entry, "prmt.b32") {
					t.Error("an operand stored [k][free] without byte gathers")
				}
			} else if strings.Contains(entry, "ld.shared.u8") {
				t.Error("k-contiguous operands gathered byte by byte")
			}
			in := inputsFor(k.Graph, uint64(i+1), 8)
			run, err := launchSim(t, text, k.Name, launches[i], k.Graph, in)
			if err != nil {
				t.Fatalf("sim: %v", err)
			}
			if n := run.stats.SharedBankConflicts; n != 0 {
				t.Errorf("%d shared-memory bank conflicts", n)
			}
			o := k.Graph.Outputs[0]
			got := run.output(t, o)
			bounds, err := tolerance.Bounds(k.Graph, in, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			checkWithinBound(t, got, bounds[o.Name])
		})
	}
}

// output reads output o of a simulator run.
func (r *simRun) output(t *testing.T, o ir.Output) *tensor.Tensor {
	t.Helper()
	buf := make([]byte, o.Value.Type.Bytes())
	if err := r.dev.Read(r.outAddr[o.Name], buf); err != nil {
		t.Fatal(err)
	}
	got, err := tensor.FromBytes(o.Value.Type, buf)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkWithinBound wants every element of got within the bound's error of its reference value
// (NaN where the reference is NaN).
func checkWithinBound(t *testing.T, got *tensor.Tensor, want tolerance.Bound) {
	t.Helper()
	bad := 0
	for i := range got.Len() {
		g, w := got.At(i), want.Val.At(i)
		ok := math.IsNaN(w) && math.IsNaN(g) || math.Abs(g-w) <= want.At(i)
		if !ok {
			if bad < 5 {
				t.Errorf("y[%d] = %g, want %g within %g", i, g, w, want.At(i))
			}
			bad++
		}
	}
}
