package ptx

import (
	"github.com/gcomp/gcomp/ir"
)

// badIndex records a bad index of gather v (bad holds where the 32-bit row is outside the
// table; value is the index as an i64, coords its coordinates in the indices of shape) in the
// error word, and returns the row to read: 0 where bad, else row.
func (g *gen) badIndex(v *ir.Value, bad, row, value string, shape ir.Shape, coords []string) (string, error) {
	b := g.e.b
	site, ok := g.sites[v]
	if !ok {
		// A gather the kernel's graph does not list (none today): it can only trap.
		b.guarded(bad, "trap")
		return row, nil
	}
	ok32 := b.label("index_ok")
	b.braIf("!"+bad, ok32)
	// The element's linear index in the indices tensor, row-major.
	elem := b.reg(rU64)
	b.ins("mov.u64", elem, "0")
	stride := 1
	for d := len(coords) - 1; d >= 0; d-- {
		c, c64 := b.reg(rU32), b.reg(rU64)
		b.ins("mov.u32", c, coords[d])
		b.ins("cvt.u64.u32", c64, c)
		b.ins("mad.lo.u64", elem, c64, imm(stride), elem)
		stride *= shape[d]
	}
	old, won := b.reg(rU64), b.reg(rPred)
	b.ins("atom.global.cas.b64", old, "["+g.errPtr+"]", "0", imm(site))
	b.ins("setp.eq.u64", won, old, "0")
	b.guarded(won, "st.global.u64", "["+g.errPtr+"+8]", elem)
	b.guarded(won, "st.global.u64", "["+g.errPtr+"+16]", value)
	b.place(ok32)
	safe := b.reg(rU32)
	b.ins("selp.b32", safe, "0", row, bad)
	return safe, nil
}
