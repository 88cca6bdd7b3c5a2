package ptx

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/internal/randgraph"
	"github.com/gcomp/gcomp/passes"
)

// Contractions the tiled templates do not take run in the direct template: f64 and integer
// operands, constants and computed values as operands, conv2d over views, 16-bit operands with
// no contiguous dim. It accumulates like the reference (f64 from +0 in ascending order;
// integers wrapping in 64 bits), so results are compared bit for bit.
func TestDirectContractions(t *testing.T) {
	cases := []struct{ name, src string }{
		{"f64_matmul", `graph g {
  input %a : f64[13,70]
  input %b : f64[70,9]
  %0 = dot_general(%a, %b) {lhs_contract=[1], rhs_contract=[0]} : f64[13,9]
  output y = %0
}`},
		{"i32_batched", `graph g {
  input %a : i32[2,5,7]
  input %b : i32[2,3,7]
  %0 = dot_general(%a, %b) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[2]} : i32[2,5,3]
  output y = %0
}`},
		{"constant_lhs", `graph g {
  %0 = constant() {dtype=f32, shape=[3,4], value=[3.25]} : f32[3,4]
  input %w : f32[5,4]
  %1 = dot_general(%0, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[3,5]
  %2 = sqrt(%1) : f32[3,5]
  output y = %2
}`},
		// sin, computed in f64 and rounded once, is correctly rounded on these inputs (f32 tanh and
		// erf are ≤ 1 ulp, which would make the f64 sum differ in its last bits).
		{"sin_operand", `graph g {
  input %x : f32[6,33]
  input %w : f32[33,10]
  %0 = sin(%x) : f32[6,33]
  %1 = dot_general(%0, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[6,10]
  output y = %1
}`},
		{"conv_sliced_input", `graph g {
  input %t : f32[1,2,4,4]
  %0 = slice(%t) {limit=[1,2,4,4], start=[0,0,2,0]} : f32[1,2,2,4]
  param %w : f32[2,2,3,3]
  %1 = conv2d(%0, %w) {padding=[1,1]} : f32[1,2,2,4]
  %2 = relu(%1) : f32[1,2,2,4]
  output y = %2
}`},
		{"conv_transposed_input", `graph g {
  input %t : f32[2,2,4,4]
  %0 = transpose(%t) {perm=[2,3,1,0]} : f32[4,4,2,2]
  param %w : f32[2,4,3,3]
  %1 = conv2d(%0, %w) {padding=[1,1]} : f32[4,2,2,2]
  output y = %1
}`},
		{"conv_f64_groups", `graph g {
  input %x : f64[2,4,7,6]
  param %w : f64[6,2,3,3]
  %0 = conv2d(%x, %w) {groups=2, padding=[1,1], stride=[2,1]} : f64[2,6,4,6]
  output y = %0
}`},
		{"f16_no_contiguous_dim", `graph g {
  input %a : f16[4,6]
  input %b : f16[3,5]
  %0 = slice(%a) {limit=[4,6], start=[0,0], stride=[1,2]} : f16[4,3]
  %1 = dot_general(%0, %b) {lhs_contract=[1], rhs_contract=[0]} : f16[4,5]
  output y = %1
}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, text := generateCase(t, c.name, c.src)
			if !strings.Contains(text, "// direct ") {
				t.Errorf("not the direct template")
			}
			checkKernel(t, k, inputsFor(k.Graph, 12, 2), true)
		})
	}
}

var randomGraphs = flag.Int("randomgraphs", 0, "graphs TestPipelineRandomGraphs runs (0: 300, -short 40)")

// Random graphs from the pass pipeline's generator (internal/randgraph), through the pipeline:
// every kernel it forms is generated, assembled, simulated and compared with the reference on
// its own body. Once ten kernels in every thousand graphs failed to generate (column reductions
// spread back over their rows; contractions over f64, constants or views).
func TestPipelineRandomGraphs(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 40
	}
	if *randomGraphs > 0 {
		n = *randomGraphs
	}
	persistent := 0
	for seed := range n {
		g := randgraph.Graph(rand.New(rand.NewPCG(uint64(seed), 3)))
		res, err := passes.Run(g, passes.Options{})
		if err != nil {
			t.Fatalf("seed %d: passes: %v", seed, err)
		}
		var kernels []Kernel
		for _, kn := range res.Kernels.Kernels {
			kernels = append(kernels, kernelOf(kn, fmt.Sprintf("s%d_%s", seed, kn.Name)))
			if kn.Kind == passes.Persistent {
				persistent++
			}
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			assembleBatch(t, kernels)
			for i, k := range kernels {
				checkKernel(t, k, inputsFor(k.Graph, uint64(seed*100+i), 1), false)
			}
		})
	}
	t.Logf("%d persistent kernels among them", persistent) // the generator's small chains form some
}
