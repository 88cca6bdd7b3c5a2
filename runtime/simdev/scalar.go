package simdev

import "github.com/gcomp/gcomp/sim"

// narrowScalars passes a 32-bit .param (a custom kernel's i32 or f32 scalar, whose bits the
// executor puts in the low half of a Ptr) as 4 bytes: the simulator checks each argument's
// size against its declaration, as gcomp's own kernels take only 64-bit pointers.
func narrowScalars(m *sim.Module, kernel string, vals []any) {
	ps, err := m.Params(kernel)
	if err != nil || len(ps) != len(vals) {
		return // Launch reports it
	}
	for i, p := range ps {
		if p.Size == 4 {
			vals[i] = uint32(vals[i].(uint64))
		}
	}
}
