package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
)

// A gather whose index lies outside its table does not trap: a trap ends the launch with a
// "trap executed" (on a GPU, an unspecified launch failure that leaves the context unusable)
// that cannot say which index was wrong. Instead the first bad index a launch meets is written to
// the launch's error word, the read uses row 0 so that nothing reads outside the table, and
// the executor, reading the word after the run, fails the run naming the gather, the element of
// the indices and its value, as the reference interpreter does.
//
// The error word is ErrorWordBytes at the ArgError parameter, zero before the run:
//
//	u64 site     the gather's number among the kernel's (IndexCheck.Site), 0 while no index was bad
//	u64 element  the linear index of the bad element in the indices tensor
//	i64 value    the index
//
// The thread whose atomic compare-and-swap of the site from 0 succeeds writes the other two:
// one record per launch, whichever thread got there first.
const ErrorWordBytes = 32

// IndexCheck describes one gather site of a kernel for the error message.
type IndexCheck struct {
	Site    int       // its number in the error word, from 1
	Op      string    // the gather as the kernel graph prints it
	Pos     string    // its source position, if known
	Indices string    // the indices operand: a kernel input's buffer name, or the value's
	Table   string    // the table's type
	Rows    int       // the table's rows: a valid index lies in [0, Rows)
	Value   *ir.Value // the gather in the kernel's graph
}

// gatherSites numbers the gathers of g from 1 in the order its live values are listed, which
// depends only on the graph's structure: kernels that share code (shareKey) number alike.
func gatherSites(g *ir.Graph) map[*ir.Value]int {
	sites := map[*ir.Value]int{}
	for _, v := range live(g) {
		if v.Op == "gather" {
			sites[v] = len(sites) + 1
		}
	}
	if len(sites) == 0 {
		return nil
	}
	return sites
}

// IndexChecks lists the gather sites of k's error word, in site order.
func IndexChecks(k Kernel) []IndexCheck {
	sites := gatherSites(k.Graph)
	if sites == nil {
		return nil
	}
	out := make([]IndexCheck, len(sites))
	format := k.Graph.Formatter()
	for v, n := range sites {
		table, idx := v.Args[0], v.Args[1]
		out[n-1] = IndexCheck{Site: n, Op: format(v), Pos: v.Pos, Indices: idx.Name, Table: table.Type.String(),
			Rows: table.Type.Shape[0], Value: v}
	}
	return out
}

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

// String is the check's description, for errors: "gather(%table, %ids) at model.go:9".
func (c IndexCheck) String() string {
	if c.Pos == "" {
		return c.Op
	}
	return fmt.Sprintf("%s at %s", c.Op, c.Pos)
}
