package ptx

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/internal/golden"
)

// quantGEMV is x·wᵀ (order "nk": q[N, K/per], axis 1, Llama's Linear) or x·w (order "kn":
// q[K/per, N], axis 0) with w = dequantize(q, scale[, zero]) read by the GEMV template.
func quantGEMV(order, dt, qd string, m, n, k, bits, group int, zero bool) string {
	per := 8 / bits
	qs, ss, ws, axis, rc := fmt.Sprintf("[%d,%d]", n, k/per), fmt.Sprintf("[%d,%d]", n, k/group), fmt.Sprintf("[%d,%d]", n, k), 1, 1
	if order == "kn" {
		qs, ss, ws, axis, rc = fmt.Sprintf("[%d,%d]", k/per, n), fmt.Sprintf("[%d,%d]", k/group, n), fmt.Sprintf("[%d,%d]", k, n), 0, 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "graph g {\n  input %%x : %s[%d,%d]\n  param %%q : %s%s\n  param %%s : %s%s\n", dt, m, k, qd, qs, dt, ss)
	args := "%q, %s"
	if zero {
		fmt.Fprintf(&b, "  param %%z : %s%s\n", qd, ss)
		args += ", %z"
	}
	fmt.Fprintf(&b, "  %%w = dequantize(%s) {axis=%d, bits=%d, group=%d} : %s%s\n", args, axis, bits, group, dt, ws)
	fmt.Fprintf(&b, "  %%0 = dot_general(%%x, %%w) {lhs_contract=[1], rhs_contract=[%d]} : %s[%d,%d]\n  output y = %%0\n}", rc, dt, m, n)
	return b.String()
}

// TestGEMVQuantized: the GEMV template with a dequantizing weight equals the reference's
// dequantize-then-matmul for 4 and 8 bits, group sizes 32/64/128 and per-channel, with and
// without zero points, f32/f16/bf16 scales, 1 to 8 rows, both stored orders, K split or not,
// read by 128-bit loads where the layout allows and element by element where not (K off
// the vector, a group smaller than a vector, int4 or N off 16 in the [K,N] order);
// checkKernel assembles for sm_80 and sm_90 (no spills) and runs with memcheck.
func TestGEMVQuantized(t *testing.T) {
	type shape struct{ m, n, k int }
	cases := []struct {
		order  string
		bits   int
		group  int // 0: per-channel (group K)
		zero   bool
		dt     string
		s      shape
		vector bool // read by 128-bit loads of q
	}{
		{"nk", 4, 32, false, "f16", shape{1, 64, 256}, true},
		{"nk", 4, 64, true, "bf16", shape{2, 40, 512}, true},
		{"nk", 4, 128, true, "f32", shape{3, 33, 1024}, true},
		{"nk", 4, 0, false, "f32", shape{8, 48, 128}, true},
		{"nk", 8, 128, false, "f32", shape{1, 96, 4096}, true},
		{"nk", 8, 32, true, "f16", shape{5, 64, 192}, true},
		{"nk", 8, 64, true, "f32", shape{2, 32, 256}, true},
		{"nk", 4, 128, true, "f16", shape{4, 96, 512}, true},
		{"nk", 8, 0, false, "f16", shape{1, 64, 256}, true},
		{"nk", 8, 128, true, "f16", shape{2, 64, 256}, true},
		{"nk", 8, 0, false, "bf16", shape{4, 50, 300}, false}, // K not a multiple of 16
		{"nk", 4, 2, true, "f16", shape{2, 64, 128}, false},   // a group smaller than a vector
		{"nk", 4, 0, false, "bf16", shape{1, 60, 80}, false},  // K not a multiple of 32
		{"kn", 8, 0, false, "f32", shape{1, 64, 256}, true},
		{"kn", 8, 0, true, "f16", shape{3, 48, 320}, true},
		{"kn", 8, 0, true, "bf16", shape{8, 40, 128}, false}, // N not a multiple of 16
		{"kn", 4, 32, true, "f16", shape{6, 64, 128}, false},
		{"kn", 8, 64, true, "bf16", shape{7, 40, 640}, false},
	}
	for _, c := range cases {
		group := c.group
		if group == 0 {
			group = c.s.k
		}
		name := fmt.Sprintf("%s_int%d_g%d_zero%v_%s_%dx%dx%d", c.order, c.bits, group, c.zero, c.dt, c.s.m, c.s.n, c.s.k)
		if c.bits == 8 && (!c.zero || c.s.m%2 == 1) {
			name += "_i8"
		}
		t.Run(name, func(t *testing.T) {
			qd := "u8" // bits 4, and bits 8 with zeros for an even number of rows
			if c.bits == 8 && (!c.zero || c.s.m%2 == 1) {
				qd = "i8"
			}
			g := parse(t, quantGEMV(c.order, c.dt, qd, c.s.m, c.s.n, c.s.k, c.bits, group, c.zero))
			kern := Kernel{Name: "k_q", Graph: g}
			cp, err := ContractionPlan(kern, harnessTarget)
			if err != nil {
				t.Fatal(err)
			}
			if cp.Kind != "gemv" {
				t.Fatalf("template %q, want gemv", cp.Kind)
			}
			var globals []string
			text, _, err := matmulKernel(kern, harnessTarget, &globals)
			if err != nil {
				t.Fatal(err)
			}
			vector := strings.Contains(text, "ld.global.v4.b32") && (strings.Contains(text, "bfe.") || strings.Contains(text, "lop3.b32"))
			if vector != c.vector {
				t.Errorf("128-bit loads of q: %v, want %v", vector, c.vector)
			}
			if n := strings.Count(text, "ld.global.v4.b32"); c.vector && c.order == "nk" && n < 2 {
				t.Errorf("%d 128-bit loads: x is not read by them", n)
			}
			in := quantInputs(g, uint64(c.s.m*c.s.n+c.s.k), c.bits, rand.New(rand.NewPCG(uint64(c.bits*group), 2)))
			checkKernel(t, kern, in, false)
		})
	}
}

// The quantized GEMV's PTX is pinned in testdata/gemv_quant.txtar (go test -update rewrites
// it): int4 with f16 scales and zeros (f16x2 unpacking), int8 with f32 scales (bfe and 2²³),
// both with x by 128-bit loads; per-channel int8 stored [K,N] (16 columns per load), and int4
// stored [K/2,N], read element by element.
func TestGEMVQuantizedGolden(t *testing.T) {
	var files []txtar.File
	for _, c := range []struct {
		name, order, dt, qd string
		bits, group         int
		zero                bool
	}{
		{"int4_g32_f16_zero", "nk", "f16", "u8", 4, 32, true},
		{"int8_perchannel_f32", "nk", "f32", "i8", 8, 256, false},
		{"int8_kn_bf16", "kn", "bf16", "i8", 8, 256, false},
		{"int4_kn_f16", "kn", "f16", "u8", 4, 32, false},
	} {
		g := parse(t, quantGEMV(c.order, c.dt, c.qd, 1, 64, 256, c.bits, c.group, c.zero))
		text, _, err := Generate(Kernel{Name: "k_" + c.name, Graph: g}, Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, txtar.File{Name: c.name + ".ptx", Data: []byte(text)})
	}
	golden.CheckTxtar(t, filepath.Join("testdata", "gemv_quant.txtar"), "The GEMV template over dequantized weights, x[1,256]·w[64,256] (TestGEMVQuantizedGolden).\n", files)
}
