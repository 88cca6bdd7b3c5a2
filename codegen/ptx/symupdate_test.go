package ptx

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// TestSymbolicUpdateSlice: the update template over a symbolic batch (Kernel.Rows, the bound's),
// on buffers allocated at the bound (memory checks on), run at batches 1, a prime and the bound:
// the run's rows are bit for bit those of the static kernel built at that batch and of the
// reference, and the rows past the run are untouched, in place (the cache's memory) and into a
// new buffer.
func TestSymbolicUpdateSlice(t *testing.T) {
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
	} {
		for _, inPlace := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/in_place=%v", c.name, inPlace), func(t *testing.T) {
				gb := updateGraph(t, c.dt, c.posType, c.cache, c.upd, c.axis)
				k := Kernel{Name: "k0_update_slice", Graph: gb, InPlace: inPlace, Symbolic: true, Rows: bound}
				text, l, err := Generate(k, Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				if last := l.Params[len(l.Params)-1]; last.Kind != ArgSize || l.Work == nil {
					t.Fatalf("params %v, work %v", l.Params, l.Work)
				}
				static, sl, err := Generate(Kernel{Name: "k0_update_slice", Graph: gb, InPlace: inPlace}, Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				if static == text || sl.Grid != l.Grid {
					t.Errorf("the symbolic kernel is the static one, or its grid at the bound %v is not the static %v", l.Grid, sl.Grid)
				}
				assemble(t, "//\n.version 7.8\n.target sm_80\n.address_size 64\n\n"+text)
				in := inputsFor(gb, 11, 4)
				for b := range bound {
					in["pos"].I[b] = tensor.WrapInt(c.posType, int64(b*5-2)) // clamped below, inside and past the end
				}
				for _, n := range []int{1, 3, bound} {
					shape := func(s []int) []int { return append([]int{n}, s[1:]...) }
					gn := updateGraph(t, c.dt, c.posType, shape(c.cache), shape(c.upd), c.axis)
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
					kn := Kernel{Name: "k0_update_slice", Graph: gn, InPlace: inPlace}
					stext, sln, err := Generate(kn, Target{SM: 80})
					if err != nil {
						t.Fatal(err)
					}
					rows := gn.Outputs[0].Value.Type.Bytes()
					got := runUpdateAt(t, text, k, l, in, l.Work.Scale*n)
					ref := want["y"].Bytes()
					if !bytes.Equal(got[:rows], ref) {
						t.Errorf("batch %d: the run's rows differ from the reference", n)
					}
					if st := runUpdateAt(t, stext, kn, sln, inN, -1); !bytes.Equal(got[:rows], st[:rows]) {
						t.Errorf("batch %d: the run's rows differ from the static kernel's at that batch", n)
					}
					past := untouched(in["cache"], inPlace)[rows:]
					if !bytes.Equal(got[rows:], past) {
						t.Errorf("batch %d: rows past the run were written", n)
					}
				}
			})
		}
	}
}

// untouchedFill is the byte a new buffer's memory holds before the launch.
const untouchedFill = 0xa5

// untouched is the result's memory before the launch: the cache's in place, else the fill.
func untouched(cache *tensor.Tensor, inPlace bool) []byte {
	if inPlace {
		return cache.Bytes()
	}
	return bytes.Repeat([]byte{untouchedFill}, len(cache.Bytes()))
}

// runUpdateAt launches update kernel k (its launch l) on buffers holding in, its output the
// cache's memory in place or a new buffer of untouchedFill bytes, with the size parameter size
// (a symbolic kernel; -1: none) and the grid from it, and returns the result's memory.
func runUpdateAt(t *testing.T, text string, k Kernel, l Launch, in map[string]*tensor.Tensor, size int) []byte {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatal(err)
	}
	addr := map[string]uint64{}
	alloc := func(name string, b []byte) uint64 {
		if p, ok := addr[name]; ok {
			return p
		}
		p, err := dev.Alloc(max(len(b), 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.Write(p, b); err != nil {
			t.Fatal(err)
		}
		addr[name] = p
		return p
	}
	var args []any
	out := ""
	for _, a := range l.Params {
		switch a.Kind {
		case ArgSize:
			args = append(args, uint32(size))
		case ArgOutput:
			out = "cache"
			if !k.InPlace {
				out = "out"
			}
			args = append(args, alloc(out, untouched(in["cache"], k.InPlace)))
		default:
			args = append(args, alloc(a.Name, in[a.Name].Bytes()))
		}
	}
	grid := l.Grid[0]
	if size >= 0 {
		grid = l.Work.Grid(int64(size))
	}
	cfg := sim.Config{Grid: sim.Dim3{X: grid, Y: 1, Z: 1}, Block: sim.Dim3{X: l.Block[0], Y: 1, Z: 1}}
	if _, err := m.Launch(k.Name, cfg, args...); err != nil {
		t.Fatalf("launch: %v", err)
	}
	buf := make([]byte, len(in["cache"].Bytes()))
	if err := dev.Read(addr[out], buf); err != nil {
		t.Fatal(err)
	}
	return buf
}
