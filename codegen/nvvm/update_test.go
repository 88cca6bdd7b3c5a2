package nvvm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// TestUpdateSlice runs codegen/ptx's update_slice table through the NVVM producer's own update
// template: a decode step's row, a prefill's rows, positions at 0, at the end, negative and past
// it (clamped), sequences at different positions, no rows, every value dtype and i64, i32, i8
// and u8 positions, and an update read through views of a fused projection. Into a new buffer
// and in place (the output bound to the operand's memory), the result equals the reference
// and codegen/ptx's bit for bit, with the same launch; the module assembles without spills.
func TestUpdateSlice(t *testing.T) {
	p := requireProducer(t)
	dims := func(s []int) string { return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(s)), ","), "[]") }
	type updateCase struct {
		name string
		src  string
		pos  []int64
	}
	var cases []updateCase
	for _, c := range []struct {
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
	} {
		cases = append(cases, updateCase{c.name, fmt.Sprintf(`graph g {
  input %%cache : %[1]s[%[2]s]
  input %%x : %[1]s[%[3]s]
  input %%pos : %[4]s[%[5]d]
  %%0 = update_slice(%%cache, %%x, %%pos) {axis=%[6]d} : %[1]s[%[2]s]
  output y = %%0
}`, c.dt, dims(c.cache), dims(c.upd), c.posType, c.cache[0], c.axis), c.pos})
	}
	cases = append(cases, updateCase{"through_views", `graph g {
  input %cache : f32[2,3,7,4]
  input %qkv : f32[2,2,36]
  input %pos : i64[2]
  %0 = slice(%qkv) {start=[0,0,12], limit=[2,2,24]} : f32[2,2,12]
  %1 = reshape(%0) {shape=[2,2,3,4]} : f32[2,2,3,4]
  %2 = transpose(%1) {perm=[0,2,1,3]} : f32[2,3,2,4]
  %3 = update_slice(%cache, %2, %pos) {axis=2} : f32[2,3,7,4]
  output y = %3
}`, []int64{5, 2}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := ir.Parse("test.gir", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			in := inputsFor(g, 7)
			pt := in["pos"].Type.DType
			for b, p := range c.pos {
				in["pos"].I[b] = tensor.WrapInt(pt, p)
			}
			want, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			d := g.Outputs[0].Value.Type.DType
			for _, inPlace := range []bool{false, true} {
				k := plan.Kernel{Name: "k0_update_slice", Graph: g, InPlace: inPlace}
				text, launches, err := p.Module([]plan.Kernel{k}, plan.Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				if launches[0].Producer == "ptx" {
					t.Fatalf("codegen/ptx's entry: %q", launches[0].Notes)
				}
				assemble(t, text, []plan.Kernel{k})
				ptxText, ptxLaunches, err := ptx.Module([]plan.Kernel{k}, plan.Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(launches[0].Grid, launches[0].Block) != fmt.Sprint(ptxLaunches[0].Grid, ptxLaunches[0].Block) {
					t.Errorf("in place %v: launch %v %v, codegen/ptx's %v %v", inPlace, launches[0].Grid, launches[0].Block, ptxLaunches[0].Grid, ptxLaunches[0].Block)
				}
				var got, emitted *tensor.Tensor
				if inPlace {
					got, emitted = runInPlace(t, text, k, launches[0], in), runInPlace(t, ptxText, k, ptxLaunches[0], in)
				} else {
					out, _ := run(t, text, k, launches[0], in)
					pout, _ := run(t, ptxText, k, ptxLaunches[0], in)
					got, emitted = out["y"], pout["y"]
				}
				what := map[bool]string{false: "new buffer", true: "in place"}[inPlace]
				compare(t, what+" (reference)", got, want["y"], true, d, false, 0)
				compare(t, what+" (codegen/ptx)", got, emitted, true, d, false, 0)
			}
		})
	}
}

// runInPlace launches an in-place update kernel with its output bound to the operand's memory
// (the input "cache"), as the memory plan binds it, and returns that memory after the launch.
func runInPlace(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	addr := map[string]uint64{}
	var args []any
	for _, a := range l.Params {
		name := a.Name
		if a.Kind == plan.ArgOutput {
			name = "cache"
		}
		if _, ok := addr[name]; !ok {
			x := in[name]
			p, err := dev.Alloc(max(x.Type.Bytes(), 1))
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.Write(p, x.Bytes()); err != nil {
				t.Fatal(err)
			}
			addr[name] = p
		}
		args = append(args, addr[name])
	}
	cfg := sim.Config{Grid: sim.Dim3{X: l.Grid[0], Y: l.Grid[1], Z: l.Grid[2]}, Block: sim.Dim3{X: l.Block[0], Y: l.Block[1], Z: l.Block[2]}}
	if _, err := m.Launch(k.Name, cfg, args...); err != nil {
		t.Fatalf("launch: %v", err)
	}
	ty := in["cache"].Type
	buf := make([]byte, ty.Bytes())
	if err := dev.Read(addr["cache"], buf); err != nil {
		t.Fatal(err)
	}
	x, err := tensor.FromBytes(ty, buf)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
