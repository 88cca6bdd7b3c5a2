package passes

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// peakLive counts a buffer from its writer through its last reader inclusive: a kernel holds
// the inputs it reads and the outputs it writes at once. The schedule compares orders by it.
func TestPeakLive(t *testing.T) {
	temp := func(name string, n int) *Buffer { return &Buffer{Name: name, Kind: TempBuffer, Type: ir.T(ir.F32, n)} }
	a, b, c := temp("a", 100), temp("b", 200), temp("c", 50)
	out := &Buffer{Name: "y", Kind: OutputBuffer, Type: ir.T(ir.F32, 1000)}
	in := &Buffer{Name: "x", Kind: InputBuffer, Type: ir.T(ir.F32, 1000)}
	k := func(reads, writes []*Buffer) *Kernel { return &Kernel{Reads: reads, Writes: writes} }
	tests := []struct {
		name    string
		kernels []*Kernel
		want    int64
	}{
		{"a chain holds input and output at its middle kernel", []*Kernel{
			k([]*Buffer{in}, []*Buffer{a}), k([]*Buffer{a}, []*Buffer{b}), k([]*Buffer{b}, []*Buffer{out}),
		}, 1200},
		{"a buffer read later stays live in between", []*Kernel{
			k([]*Buffer{in}, []*Buffer{a}), k([]*Buffer{in}, []*Buffer{c}), k([]*Buffer{c}, []*Buffer{b}), k([]*Buffer{a, b}, []*Buffer{out}),
		}, 1400},
		{"inputs and outputs are not temps", []*Kernel{k([]*Buffer{in}, []*Buffer{out})}, 0},
		{"a temp nobody reads lives at its writer", []*Kernel{k([]*Buffer{in}, []*Buffer{c, out})}, 200},
	}
	for _, tc := range tests {
		if got := peakLive(tc.kernels); got != tc.want {
			t.Errorf("%s: peakLive = %d, want %d", tc.name, got, tc.want)
		}
	}
}
