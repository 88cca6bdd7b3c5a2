package nvvm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicUpdateSlice: the update template over a symbolic batch (Kernel.Rows, the bound's)
// is the NVVM producer's own (Lacks names nothing), built once with codegen/ptx's parameters,
// launch and work, not the static kernel, assembling for sm_80 and sm_90 without spills. Run on
// the memchecked, racechecked simulator at batches 1, a prime and the bound, with only the run's
// rows of the update, the positions (and, into a new buffer, the cache) allocated, the run's rows
// are bit for bit the reference's at that batch and codegen/ptx's symbolic entry's, and the rows
// past the run are untouched, in place (the cache's memory) and into a new buffer.
func TestSymbolicUpdateSlice(t *testing.T) {
	p := requireProducer(t)
	const bound = 5
	for _, c := range []struct {
		name        string
		dt, posType ir.DType
		cache, upd  []int // at the bound
		axis        int
	}{
		{"decode_f32", ir.F32, ir.I64, []int{bound, 4, 16, 8}, []int{bound, 4, 1, 8}, 2},
		{"prefill_f16_i32_positions", ir.F16, ir.I32, []int{bound, 2, 9, 4}, []int{bound, 2, 3, 4}, 2},
		{"innermost_axis_i64", ir.I64, ir.I64, []int{bound, 3, 7}, []int{bound, 3, 2}, 2},
		{"bf16_u8_positions", ir.BF16, ir.U8, []int{bound, 2, 6, 4}, []int{bound, 2, 2, 4}, 2},
	} {
		for _, inPlace := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/in_place=%v", c.name, inPlace), func(t *testing.T) {
				gb := symUpdateGraph(t, c.dt, c.posType, c.cache, c.upd, c.axis)
				k := plan.Kernel{Name: "k0_update_slice", Graph: gb, InPlace: inPlace, Symbolic: true, Rows: bound}
				text, l, ptxText, pl := bothEntries(t, p, k, plan.Target{SM: 80})
				if last := l.Params[len(l.Params)-1]; last.Kind != plan.ArgSize || l.Work == nil {
					t.Fatalf("params %v, work %v", l.Params, l.Work)
				}
				if st, _, err := p.Module([]plan.Kernel{{Name: k.Name, Graph: gb, InPlace: inPlace}}, plan.Target{SM: 80}); err != nil || st == text {
					t.Errorf("the symbolic kernel is the static one (%v)", err)
				}
				if !strings.Contains(text, ".param .u32 k0_update_slice_param_") {
					t.Error("no .u32 size parameter in the PTX")
				}
				assemble(t, text, []plan.Kernel{k})
				in := inputsFor(gb, 11)
				for b := range bound {
					in["pos"].I[b] = tensor.WrapInt(c.posType, int64(b*5-2)) // clamped below, inside and past the end
				}
				for _, n := range []int{1, 3, bound} {
					shape := func(s []int) []int { return append([]int{n}, s[1:]...) }
					gn := symUpdateGraph(t, c.dt, c.posType, shape(c.cache), shape(c.upd), c.axis)
					inN := map[string]*tensor.Tensor{}
					for _, v := range gn.Inputs() {
						x, err := tensor.FromBytes(v.Type, in[v.Name].Bytes()[:v.Type.Bytes()]) // the first n rows
						if err != nil {
							t.Fatal(err)
						}
						inN[v.Name] = x
					}
					want, err := ref.Run(gn, inN, nil)
					if err != nil {
						t.Fatal(err)
					}
					rows := gn.Outputs[0].Value.Type.Bytes()
					got := runSymUpdate(t, text, k, l, in, inN, n)
					emitted := runSymUpdate(t, ptxText, k, pl, in, inN, n)
					if !bytes.Equal(got[:rows], want["y"].Bytes()) {
						t.Errorf("batch %d: the run's rows differ from the reference", n)
					}
					if !bytes.Equal(got, emitted) {
						t.Errorf("batch %d: the result differs from codegen/ptx's", n)
					}
					if past := symUntouched(in["cache"], inPlace)[rows:]; !bytes.Equal(got[rows:], past) {
						t.Errorf("batch %d: rows past the run were written", n)
					}
				}
			})
		}
	}
}

// symUpdateGraph is one update_slice of upd into cache at positions of dtype posType.
func symUpdateGraph(t *testing.T, dt, posType ir.DType, cache, upd []int, axis int) *ir.Graph {
	t.Helper()
	dims := func(s []int) string { return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(s)), ","), "[]") }
	g, err := ir.Parse("u.gir", fmt.Appendf(nil, "graph g {\n  input %%cache : %[1]s[%[2]s]\n  input %%x : %[1]s[%[3]s]\n  input %%pos : %[4]s[%[5]d]\n"+
		"  %%0 = update_slice(%%cache, %%x, %%pos) {axis=%[6]d} : %[1]s[%[2]s]\n  output y = %%0\n}\n", dt, dims(cache), dims(upd), posType, cache[0], axis))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// symUntouchedFill is the byte a new buffer's memory holds before the launch.
const symUntouchedFill = 0xa5

// symUntouched is the result's memory before the launch: the cache's in place, else the fill.
func symUntouched(cache *tensor.Tensor, inPlace bool) []byte {
	if inPlace {
		return cache.Bytes()
	}
	return bytes.Repeat([]byte{symUntouchedFill}, len(cache.Bytes()))
}

// runSymUpdate launches symbolic update kernel k (launch l) at n of its rows on a fresh
// simulator device: the result is the bound's memory (in place the whole cache, in), every other
// buffer holds the run's rows only (inN), the size argument is n times the work's scale and the
// grid follows from it. It returns the result's memory.
func runSymUpdate(t *testing.T, text string, k plan.Kernel, l plan.Launch, in, inN map[string]*tensor.Tensor, n int) []byte {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	alloc := func(b []byte) uint64 {
		p, err := dev.Alloc(max(len(b), 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.Write(p, b); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := alloc(symUntouched(in["cache"], k.InPlace))
	size := n * l.Work.Scale
	var args []any
	for _, a := range l.Params {
		switch {
		case a.Kind == plan.ArgSize:
			args = append(args, uint32(size))
		case a.Kind == plan.ArgOutput, a.Name == "cache" && k.InPlace:
			args = append(args, out)
		default:
			args = append(args, alloc(inN[a.Name].Bytes()))
		}
	}
	cfg := sim.Config{Grid: sim.Dim3{X: l.Work.Grid(int64(size)), Y: 1, Z: 1}, Block: sim.Dim3{X: l.Block[0], Y: 1, Z: 1}, RaceGlobal: true}
	if _, err := m.Launch(k.Name, cfg, args...); err != nil {
		t.Fatalf("batch %d: %v", n, err)
	}
	buf := make([]byte, len(in["cache"].Bytes()))
	if err := dev.Read(out, buf); err != nil {
		t.Fatal(err)
	}
	return buf
}
