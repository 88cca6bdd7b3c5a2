package ptx

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// appendGraph is a decoding step's attention over caches it appends to, as the passes' appendkv
// hands it to the template: update_slice(cache, rows, pos) {axis=2} for K (its rows read through
// a transpose of [B, T, KVH, E], as a projection's output is) and V, attention over the results.
func appendGraph(t *testing.T, d, posType ir.DType, b, h, kvh, l, s, e int) *ir.Graph {
	t.Helper()
	return parse(t, fmt.Sprintf(`graph g {
  input %%q : %[1]s[%[2]d,%[3]d,%[5]d,%[7]d]
  input %%knew : %[1]s[%[2]d,%[5]d,%[4]d,%[7]d]
  input %%vnew : %[1]s[%[2]d,%[4]d,%[5]d,%[7]d]
  input %%kc : %[1]s[%[2]d,%[4]d,%[6]d,%[7]d]
  input %%vc : %[1]s[%[2]d,%[4]d,%[6]d,%[7]d]
  input %%pos : %[8]s[%[2]d]
  %%0 = transpose(%%knew) {perm=[0,2,1,3]} : %[1]s[%[2]d,%[4]d,%[5]d,%[7]d]
  %%1 = update_slice(%%kc, %%0, %%pos) {axis=2} : %[1]s[%[2]d,%[4]d,%[6]d,%[7]d]
  %%2 = update_slice(%%vc, %%vnew, %%pos) {axis=2} : %[1]s[%[2]d,%[4]d,%[6]d,%[7]d]
  %%3 = attention(%%q, %%1, %%2, %%pos) {mask="position", scale=%[9]g} : %[1]s[%[2]d,%[3]d,%[5]d,%[7]d]
  output o = %%3
  output k = %%1
  output v = %%2
}`, d, b, h, kvh, l, s, e, posType, 1/math.Sqrt(float64(e))))
}

// TestAttentionAppendKernel runs the split-KV template appending the step's K and V rows to its
// caches in place against the reference (update_slice then attention): positions at the first,
// a middle and the last key and clamped past the cache, a batch whose entries sit at different
// positions, grouped heads, two query rows, f32 and f16, positions i64 and i32. The attention's
// output is within the template's tolerance, the caches bit for bit the reference's, with the
// simulator's memory checks, a race check between the blocks and every block order giving the
// same bits; ptxas assembles it for sm_80 and sm_90.
func TestAttentionAppendKernel(t *testing.T) {
	for _, c := range []struct {
		d, posType         ir.DType
		b, h, kvh, l, s, e int
		pos                []int64
	}{
		{ir.F32, ir.I64, 1, 4, 4, 1, 200, 64, []int64{0}},       // the first key: the new row alone
		{ir.F32, ir.I64, 1, 4, 4, 1, 200, 64, []int64{97}},      // a middle one
		{ir.F32, ir.I64, 1, 4, 4, 1, 200, 64, []int64{199}},     // the last key
		{ir.F32, ir.I32, 2, 4, 4, 1, 150, 64, []int64{3, 148}},  // entries at different positions
		{ir.F32, ir.I64, 2, 8, 2, 1, 130, 64, []int64{129, 40}}, // GQA, 4 query heads per KV head
		{ir.F32, ir.I64, 1, 4, 2, 2, 100, 32, []int64{50}},      // two query rows and two appended
		{ir.F32, ir.I64, 1, 2, 2, 1, 64, 64, []int64{70}},       // past the cache: the last row, clamped
		{ir.F32, ir.I64, 2, 2, 1, 1, 20, 64, []int64{19, 0}},    // S < one chunk: no split, every block writes its rows
		{ir.F16, ir.I64, 1, 4, 4, 1, 200, 64, []int64{120}},     //
		{ir.F16, ir.I32, 2, 8, 2, 1, 256, 64, []int64{0, 255}},  // GQA, the first and last keys
		{ir.F16, ir.I64, 1, 4, 1, 1, 96, 40, []int64{31}},       // MQA, 40 columns: element by element
	} {
		name := fmt.Sprintf("%s_%s_B%d_H%d_KVH%d_L%d_S%d_E%d_pos%v", c.d, c.posType, c.b, c.h, c.kvh, c.l, c.s, c.e, c.pos)
		t.Run(name, func(t *testing.T) {
			g := appendGraph(t, c.d, c.posType, c.b, c.h, c.kvh, c.l, c.s, c.e)
			in := inputsFor(g, 5, 1)
			for i, p := range c.pos {
				in["pos"].I[i] = p
			}
			k := Kernel{Name: "k0_attention_append", Graph: g, InPlace: true}
			text, launches, err := Module([]Kernel{k}, harnessTarget)
			if err != nil {
				t.Fatal(err)
			}
			regs := assemble(t, text)
			want, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			var first map[string]*tensor.Tensor
			for _, order := range []sim.BlockOrder{sim.InOrder, sim.Reverse, sim.RandomOrder} {
				got := runAppend(t, text, k.Name, launches[0], g, in, order)
				if first == nil {
					first = got
					checkAttention(t, got["o"], want["o"])
					for _, name := range []string{"k", "v"} {
						if string(got[name].Bytes()) != string(want[name].Bytes()) {
							t.Errorf("cache %s differs from the reference's", name)
						}
					}
					continue
				}
				for name, x := range got {
					if string(x.Bytes()) != string(first[name].Bytes()) {
						t.Errorf("%v: %s gives other bits", order, name)
					}
				}
			}
			if !strings.Contains(text, "split-KV attention") || (launches[0].Grid[0] < 2) != (c.s < 32) {
				t.Errorf("want the split-KV template, split unless S < 32: grid %v", launches[0].Grid)
			}
			t.Logf("registers %v, grid %v", regs, launches[0].Grid)
		})
	}
}

// TestAttentionAppendRefused: the template appends only to a cache that is its output's memory
// and that the kernel writes; otherwise the kernel is refused with an error, never written half.
func TestAttentionAppendRefused(t *testing.T) {
	g := appendGraph(t, ir.F32, ir.I64, 1, 2, 2, 1, 64, 64)
	unwritten := appendGraph(t, ir.F32, ir.I64, 1, 2, 2, 1, 64, 64)
	unwritten.Outputs = unwritten.Outputs[:1] // the caches' updates computed, not written
	for _, c := range []struct {
		name string
		k    Kernel
		want string
	}{
		{"not in place", Kernel{Name: "k0_attention_append", Graph: g}, "not in place"},
		{"caches not written", Kernel{Name: "k0_attention_append", Graph: unwritten, InPlace: true}, "does not write"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := Generate(c.k, harnessTarget); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want the kernel refused: %q", err, c.want)
			}
		})
	}
}

// runAppend launches an appending attention kernel with each cache output bound to its cache
// input's memory (the plan's in_place_of), blocks in the given order with the race check between
// them on, and returns the attention's output and the caches after the launch.
func runAppend(t *testing.T, text, kernel string, l Launch, g *ir.Graph, in map[string]*tensor.Tensor, order sim.BlockOrder) map[string]*tensor.Tensor {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	cacheOf := map[string]string{"k": "kc", "v": "vc"}
	addr := map[string]uint64{}
	types := map[string]ir.Type{}
	alloc := func(name string, ty ir.Type, data []byte) uint64 {
		if a, ok := addr[name]; ok {
			return a
		}
		return allocNamed(t, dev, addr, types, name, ty, data)
	}
	var args []any
	for _, a := range l.Params {
		switch a.Kind {
		case ArgInput:
			args = append(args, alloc(a.Name, in[a.Name].Type, in[a.Name].Bytes()))
		case ArgOutput:
			if c, ok := cacheOf[a.Name]; ok {
				args = append(args, alloc(c, in[c].Type, in[c].Bytes()))
				addr[a.Name], types[a.Name] = addr[c], in[c].Type
				continue
			}
			ty := g.Outputs[a.Index].Value.Type
			args = append(args, alloc(a.Name, ty, make([]byte, ty.Bytes())))
		case ArgScratch:
			args = append(args, alloc("scratch", ir.T(ir.U8, a.Bytes), make([]byte, a.Bytes)))
		default:
			t.Fatalf("unexpected parameter %+v", a)
		}
	}
	cfg := sim.Config{Grid: sim.Dim3{X: l.Grid[0], Y: l.Grid[1], Z: l.Grid[2]}, Block: sim.Dim3{X: l.Block[0], Y: l.Block[1], Z: l.Block[2]},
		Order: order, Seed: 3, RaceGlobal: true}
	if _, err := m.Launch(kernel, cfg, args...); err != nil {
		t.Fatalf("launch (%v): %v", order, err)
	}
	out := map[string]*tensor.Tensor{}
	for _, name := range []string{"o", "k", "v"} {
		buf := make([]byte, types[name].Bytes())
		if err := dev.Read(addr[name], buf); err != nil {
			t.Fatal(err)
		}
		x, err := tensor.FromBytes(types[name], buf)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = x
	}
	return out
}

// allocNamed allocates ty's bytes (at least one) on dev, writes data at their start and records
// the address and type under name.
func allocNamed(t *testing.T, dev *sim.Device, addr map[string]uint64, types map[string]ir.Type, name string, ty ir.Type, data []byte) uint64 {
	t.Helper()
	a, err := dev.Alloc(max(ty.Bytes(), 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Write(a, data); err != nil {
		t.Fatal(err)
	}
	addr[name], types[name] = a, ty
	return a
}
