package ptx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// updateCases are update_slice kernels: a decode step's one row per sequence, a prefill's rows,
// positions at 0, at the end and clamped past it, batches whose rows sit at different positions,
// no rows at all, and the dtypes of values and of positions.
var updateCases = []struct {
	name        string
	dt, posType ir.DType
	cache, upd  []int
	axis        int
	pos         []int64
}{
	{"decode_f32", ir.F32, ir.I64, []int{1, 2, 6, 4}, []int{1, 2, 1, 4}, 2, []int64{3}},
	{"decode_at_0", ir.F32, ir.I64, []int{1, 2, 6, 4}, []int{1, 2, 1, 4}, 2, []int64{0}},
	{"decode_at_end", ir.F32, ir.I64, []int{1, 2, 6, 4}, []int{1, 2, 1, 4}, 2, []int64{5}},
	{"batch_positions_clamped", ir.F32, ir.I64, []int{3, 2, 6, 4}, []int{3, 2, 1, 4}, 2, []int64{5, 0, 9}},
	{"negative_clamps", ir.F32, ir.I32, []int{2, 1, 5, 3}, []int{2, 1, 1, 3}, 2, []int64{-4, 2}},
	{"prefill_rows", ir.F32, ir.I64, []int{2, 3, 9, 5}, []int{2, 3, 4, 5}, 2, []int64{0, 3}},
	{"prefill_past_end", ir.F32, ir.I64, []int{2, 3, 9, 5}, []int{2, 3, 4, 5}, 2, []int64{6, 100}},
	{"whole_axis", ir.F32, ir.I64, []int{2, 4, 3}, []int{2, 4, 3}, 1, []int64{1, 0}},
	{"no_rows", ir.F32, ir.I64, []int{2, 2, 6, 4}, []int{2, 2, 0, 4}, 2, []int64{1, 2}},
	{"many_blocks", ir.F32, ir.I64, []int{2, 4, 64, 80}, []int{2, 4, 3, 80}, 2, []int64{17, 61}},
	{"f16", ir.F16, ir.I64, []int{2, 2, 6, 4}, []int{2, 2, 1, 4}, 2, []int64{1, 4}},
	{"bf16_u8_positions", ir.BF16, ir.U8, []int{2, 2, 6, 4}, []int{2, 2, 2, 4}, 2, []int64{1, 200}},
	{"f64", ir.F64, ir.I64, []int{1, 3, 5}, []int{1, 1, 5}, 1, []int64{2}},
	{"i64_i8_positions", ir.I64, ir.I8, []int{2, 5, 3}, []int{2, 2, 3}, 1, []int64{-1, 3}},
	{"i32", ir.I32, ir.I32, []int{2, 5, 3}, []int{2, 1, 3}, 1, []int64{4, 2}},
	{"u8", ir.U8, ir.I64, []int{2, 5, 3}, []int{2, 2, 3}, 1, []int64{2, 0}},
	{"bool", ir.Bool, ir.I64, []int{2, 5, 3}, []int{2, 2, 3}, 1, []int64{3, 1}},
	{"innermost_axis", ir.F32, ir.I64, []int{2, 3, 7}, []int{2, 3, 2}, 2, []int64{5, 1}},
}

func updateGraph(t *testing.T, dt, posType ir.DType, cache, upd []int, axis int) *ir.Graph {
	dims := func(s []int) string { return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(s)), ","), "[]") }
	return parse(t, fmt.Sprintf(`graph g {
  input %%cache : %[1]s[%[2]s]
  input %%x : %[1]s[%[3]s]
  input %%pos : %[4]s[%[5]d]
  %%0 = update_slice(%%cache, %%x, %%pos) {axis=%[6]d} : %[1]s[%[2]s]
  output y = %%0
}`, dt, dims(cache), dims(upd), posType, cache[0], axis))
}

// TestUpdateSlice: the update template equals the reference bit for bit, written into a new
// buffer (every element) and in place (the result's memory is the operand's, holding its values:
// only the update's elements are written, by a launch the update's size), with the simulator's
// memory checks on; both assemble with ptxas.
func TestUpdateSlice(t *testing.T) {
	for _, c := range updateCases {
		t.Run(c.name, func(t *testing.T) {
			g := updateGraph(t, c.dt, c.posType, c.cache, c.upd, c.axis)
			in := inputsFor(g, 7, 4)
			for b, p := range c.pos {
				in["pos"].I[b] = tensor.WrapInt(c.posType, p)
			}
			l := checkBothUpdates(t, g, in)
			n := ir.Shape(c.upd).NumElements()
			if want := max(1, (n+loopBlock-1)/loopBlock); l.Grid != [3]int{want, 1, 1} {
				t.Errorf("in place: grid %v, want %d blocks for the update's %d elements", l.Grid, want, n)
			}
		})
	}
}

// TestUpdateSliceThroughViews: the update read through views of a projection's output (GPT-2's
// K rows: a slice of q|k|v, split into heads and transposed to [B, H, T, D]), as the fuser hands
// it to the template, in place and into a new buffer.
func TestUpdateSliceThroughViews(t *testing.T) {
	g := parse(t, `graph g {
  input %cache : f32[2,3,7,4]
  input %qkv : f32[2,2,36]
  input %pos : i64[2]
  %0 = slice(%qkv) {start=[0,0,12], limit=[2,2,24]} : f32[2,2,12]
  %1 = reshape(%0) {shape=[2,2,3,4]} : f32[2,2,3,4]
  %2 = transpose(%1) {perm=[0,2,1,3]} : f32[2,3,2,4]
  %3 = update_slice(%cache, %2, %pos) {axis=2} : f32[2,3,7,4]
  output y = %3
}`)
	in := inputsFor(g, 3, 4)
	in["pos"].I[0], in["pos"].I[1] = 5, 2
	checkBothUpdates(t, g, in)
}

// checkBothUpdates checks g's update kernel into a new buffer (checkKernel) and in place, with
// its output bound to the operand's memory, bit for bit against the reference, and returns the
// in-place launch.
func checkBothUpdates(t *testing.T, g *ir.Graph, in map[string]*tensor.Tensor) Launch {
	t.Helper()
	checkKernel(t, Kernel{Name: "k0_update_slice", Graph: g}, in, true)
	k := Kernel{Name: "k0_update_slice", Graph: g, InPlace: true}
	text, launches, err := Module([]Kernel{k}, harnessTarget)
	if err != nil {
		t.Fatal(err)
	}
	assemble(t, text)
	want, err := ref.Run(g, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "in place", runInPlace(t, text, k, launches[0], in), want["y"], true, g.Outputs[0].Value.Type.DType, 1, 1)
	return launches[0]
}

// runInPlace launches an in-place update kernel with its output bound to the operand's memory,
// as the memory plan binds it, and returns that memory after the launch.
func runInPlace(t *testing.T, text string, k Kernel, l Launch, in map[string]*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromBytes(in["cache"].Type, runUpdateAt(t, text, k, l, in, -1)) // symupdate_test.go
	if err != nil {
		t.Fatal(err)
	}
	return x
}
