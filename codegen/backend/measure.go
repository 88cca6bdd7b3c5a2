package backend

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/sim"
)

// Counters are one entry's measured figures: ptxas's (for one architecture) and the simulator's
// over one launch.
type Counters struct {
	// Assembled: ptxas and cuobjdump ran. Registers per thread, the warps one SM keeps resident
	// (registers, shared memory, block size) and the entry's static SASS instructions.
	Assembled              bool
	Registers, Warps, SASS int
	// Simulated: the simulator ran the launch (on Grid, which may be a sample of the plan's
	// grid). WarpInsts are the warp instructions it issued; the global load and store bytes the
	// threads asked for and the 32-byte sectors that moved.
	Simulated                                        bool
	Grid                                             [3]int
	WarpInsts                                        int64
	LoadBytes, LoadSectors, StoreBytes, StoreSectors int64
	SimErr                                           error
}

// sampleBlocks is how many blocks of a launch Auto simulates: both producers share the launch
// plan (grid, block, which element each block takes), so the same sample of blocks is the same
// work in both. Grid-stride kernels do all their work in the sample; tiled and row kernels do
// that many tiles or rows.
const sampleBlocks = 2

// sampleGrid is grid cut to at most n blocks, x first.
func sampleGrid(grid [3]int, n int) [3]int {
	x := min(grid[0], n)
	y := min(grid[1], max(1, n/x))
	z := min(grid[2], max(1, n/(x*y)))
	return [3]int{x, y, z}
}

// maxSimBytes bounds the buffers a sampled launch allocates in the simulator: a kernel reading
// a larger table (an embedding) is judged by ptxas's counters alone.
const maxSimBytes = 64 << 20

// assembly is what measureModule asks of ptxas and cuobjdump.
type assembly int

const (
	noAssembly assembly = iota
	// registersFirst: ptxas's registers and occupancy for every entry, cuobjdump's SASS count
	// only when an entry could not be simulated (the count is Auto's fallback; cuobjdump on a
	// whole model takes several times ptxas's time).
	registersFirst
	withSASS // both for every entry
)

// measureModule measures the entries launches run in text, each once: the simulator over a
// launch on the plan's grid cut to sample blocks (sample 0: the whole grid, buffers unbounded),
// and ptxas and cuobjdump for arch as asm asks (nothing without ptxas). kernels[i] is
// launches[i]'s kernel; launches sharing an entry are measured at the first.
func measureModule(text string, kernels []ptx.Kernel, launches []ptx.Launch, arch string, sample int, asm assembly) map[string]*Counters {
	out := map[string]*Counters{}
	for _, l := range launches {
		out[l.Entry] = &Counters{}
	}
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err == nil {
		defer m.Close()
	}
	allSimulated := true
	for i, l := range launches {
		c := out[l.Entry]
		if c.Simulated || c.SimErr != nil {
			continue
		}
		if err != nil {
			c.SimErr, allSimulated = err, false
			continue
		}
		grid := l.Grid
		if sample > 0 {
			grid = sampleGrid(grid, sample)
		}
		st, err := simulate(dev, m, kernels[i], l, grid, sample > 0)
		if err != nil {
			c.SimErr, allSimulated = err, false
			continue
		}
		c.Simulated, c.Grid, c.WarpInsts = true, grid, st.WarpInsts
		c.LoadBytes, c.LoadSectors = st.GlobalLoadBytes, st.GlobalLoadSectors
		c.StoreBytes, c.StoreSectors = st.GlobalStoreBytes, st.GlobalStoreSectors
	}
	if asm == noAssembly {
		return out
	}
	res, cubin, err := ptxas.AssembleCubin([]byte(text), arch)
	if err != nil {
		return out
	}
	for _, l := range launches {
		c, k := out[l.Entry], res.Kernel(l.Entry)
		if k == nil || c.Assembled {
			continue
		}
		c.Assembled, c.Registers = true, k.Registers
		c.Warps = ptxas.ResidentWarps(arch, k.Registers, k.SharedBytes+l.SharedBytes, l.Block[0]*l.Block[1]*l.Block[2])
	}
	if asm == withSASS || !allSimulated {
		countSASS(cubin, out)
	}
	return out
}

// addSASS counts the SASS instructions of text's entries in out (assembled again for arch).
func addSASS(text, arch string, out map[string]*Counters) {
	if _, cubin, err := ptxas.AssembleCubin([]byte(text), arch); err == nil {
		countSASS(cubin, out)
	}
}

// countSASS sets the SASS instruction count of each counted entry from its cubin (none without
// cuobjdump).
func countSASS(cubin []byte, out map[string]*Counters) {
	sass, err := ptxas.SASS(cubin)
	if err != nil {
		return
	}
	for entry, c := range out {
		c.SASS = sass[entry]
	}
}

// simulate runs l's entry of m once on grid, every buffer zero (an index 0 is inside every
// table, a zero ticket starts a split reduction), without the sanitizers, blocks one after
// another: the counters depend only on the code and the launch. A sample (capped) allocates at
// most maxSimBytes.
func simulate(dev *sim.Device, m *sim.Module, k ptx.Kernel, l ptx.Launch, grid [3]int, capped bool) (*sim.Stats, error) {
	g := k.Graph
	sizes := make([]int, len(l.Params))
	total := 0
	for i, a := range l.Params {
		var t ir.Type
		switch a.Kind {
		case ptx.ArgInput:
			t = g.Inputs()[a.Index].Type
		case ptx.ArgParam:
			t = g.Params()[a.Index].Type
		case ptx.ArgOutput:
			t = g.Outputs[a.Index].Value.Type
		case ptx.ArgScratch:
			t = ir.T(ir.U8, a.Bytes)
		case ptx.ArgError:
			t = ir.T(ir.U8, ptx.ErrorWordBytes)
		case ptx.ArgSize:
			continue // a value, not a buffer
		default:
			return nil, fmt.Errorf("parameter %d of %s: unknown kind %d", i, l.Entry, a.Kind)
		}
		sizes[i] = max(t.Bytes(), 1)
		total += sizes[i]
	}
	if capped && total > maxSimBytes {
		return nil, fmt.Errorf("%s: %d bytes of buffers, more than the %d a sample simulates", l.Entry, total, maxSimBytes)
	}
	var args []any
	for i, n := range sizes {
		if l.Params[i].Kind == ptx.ArgSize {
			args = append(args, uint32(boundSize(k, l)))
			continue
		}
		addr, err := dev.Alloc(n)
		if err != nil {
			return nil, err
		}
		defer dev.Free(addr)
		if err := dev.Memset(addr, 0, n); err != nil {
			return nil, err
		}
		args = append(args, addr)
	}
	cfg := sim.Config{Grid: sim.Dim3{X: grid[0], Y: grid[1], Z: grid[2]},
		Block: sim.Dim3{X: l.Block[0], Y: l.Block[1], Z: l.Block[2]}, SharedBytes: l.SharedBytes,
		NoCheck: true, Workers: 1}
	return m.Launch(l.Entry, cfg, args...)
}

// boundSize is a symbolic kernel's size argument at the bound, the run it is measured on: its
// rows (a flat loop's elements) times its work's units per row.
func boundSize(k ptx.Kernel, l ptx.Launch) int {
	rows := k.Rows
	if rows == 0 {
		rows = k.Graph.Outputs[0].Value.Type.Shape.NumElements()
	}
	return rows * l.Work.Scale
}
