package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The transpose-tile template: a loop kernel that reads a buffer through a transpose moving its
// contiguous dim stages 32×32 tiles through shared memory, so both the read (along the
// buffer's last dim) and the write (along the output's last dim) are coalesced. Everything
// else in the kernel is evaluated as in a loop kernel, at the output element.
const tileDim, tileRows = 32, 8 // tile side; a 256-thread block covers 8 rows per pass

type transposeTile struct {
	view    *ir.Value // transpose(buffer), read only at the output's index
	p, last int       // output dims: p maps to the buffer's last dim; last is the output's last
}

// findTransposeTile returns the transposed read worth staging, or nil.
func findTransposeTile(g *ir.Graph, shape ir.Shape) *transposeTile {
	r := shape.Rank()
	if r < 2 || shape[r-1] < 16 {
		return nil
	}
	uses := usesOf(g)
	for _, v := range live(g) {
		if v.Op != "transpose" || !v.Type.Shape.Equal(shape) {
			continue
		}
		if src := v.Args[0]; src.Op != ir.OpInput && src.Op != ir.OpParam {
			continue
		}
		perm := v.Attrs.Ints("perm")
		p := -1
		for i, d := range perm {
			if d == r-1 {
				p = i
			}
		}
		if p == r-1 || shape[p] < 16 {
			continue
		}
		// Only elementwise consumers of the output's shape, so the view is read at the output's
		// own index.
		if readAtIndex(uses, v, false) {
			return &transposeTile{view: v, p: p, last: r - 1}
		}
	}
	return nil
}

func transposeKernel(k Kernel, tt *transposeTile, globals *[]string) (string, Launch, error) {
	g := k.Graph
	shape := g.Outputs[0].Value.Type.Shape
	b := newBuilder(k.Name)
	gn, args := header(k, b, globals)
	a := gn.a
	src := tt.view.Args[0]
	d := src.Type.DType
	slot := 4
	if classOf(d) == rF64 || classOf(d) == rU64 {
		slot = 8
	}
	tile := b.sharedArray("tile", tileDim*(tileDim+1)*slot, 8)
	base := b.reg(rU32)
	b.ins("mov.u32", base, tile)
	tid := b.reg(rU32)
	b.ins("mov.u32", tid, "%tid.x")
	lo, hi := a.rem(tid, tileDim), a.div(tid, tileDim)
	// Tiles: the other dims (row-major), then tiles along p, then along last.
	var rest ir.Shape
	var restDims []int
	for i, n := range shape {
		if i != tt.p && i != tt.last {
			rest, restDims = append(rest, n), append(restDims, i)
		}
	}
	tp, tl := ceilDiv(shape[tt.p], tileDim), ceilDiv(shape[tt.last], tileDim)
	tiles := rest.NumElements() * tp * tl
	id, next := blockTiles(b, tiles)
	gn.reset()
	p0 := a.mul(a.rem(a.div(id, tl), tp), tileDim)
	l0 := a.mul(a.rem(id, tl), tileDim)
	ri := newIndexLin(rest, a.div(id, tp*tl))
	coords := func(pl, ll string) *index {
		c := make([]string, len(shape))
		for j, dd := range restDims {
			c[dd] = ri.getCoord(a, j)
		}
		c[tt.p], c[tt.last] = a.add(p0, pl), a.add(l0, ll)
		return newIndexCoords(shape, c)
	}
	valid := func(x *index) string {
		ok := b.reg(rPred)
		b.ins("setp.lt.u32", ok, a.reg(x.coord[tt.p]), imm(shape[tt.p]))
		q := b.reg(rPred)
		b.ins("setp.lt.u32", q, a.reg(x.coord[tt.last]), imm(shape[tt.last]))
		b.ins("and.pred", ok, ok, q)
		return ok
	}
	typ := sharedType(d)
	if d == ir.Bool {
		typ = "u32"
	}
	slotAddr := func(ll, pl string) string {
		return fmt.Sprintf("[%s]", a.add(base, a.mul(a.mad(ll, tileDim+1, pl), slot)))
	}
	// Phase 1: consecutive threads read consecutive elements of the buffer's last dim (p).
	for r := range tileDim / tileRows {
		ll := a.add(hi, imm(r*tileRows))
		x := coords(lo, ll)
		skip := b.label("load_skip")
		b.braIf("!"+valid(x), skip)
		v, err := gn.eval(tt.view, x)
		if err != nil {
			return "", Launch{}, err
		}
		reg := gn.e.reg(v)
		if d == ir.Bool {
			reg = gn.e.boolToInt(v).r
		}
		b.ins("st.shared."+typ, slotAddr(ll, lo), reg)
		b.place(skip)
		gn.reset()
	}
	b.ins("bar.sync", "0")
	// Phase 2: consecutive threads compute consecutive elements of the output's last dim.
	for r := range tileDim / tileRows {
		pl := a.add(hi, imm(r*tileRows))
		x := coords(pl, lo)
		skip := b.label("store_skip")
		b.braIf("!"+valid(x), skip)
		raw := b.reg(memClassShared(d))
		b.ins("ld.shared."+typ, raw, slotAddr(lo, pl))
		v := val{d, raw}
		if d == ir.Bool {
			p := b.reg(rPred)
			b.ins("setp.ne.u32", p, raw, "0")
			v = val{d, p}
		}
		gn.bound[tt.view] = func(*index) val { return v }
		ovs, err := gn.evalOutputs(x)
		if err != nil {
			return "", Launch{}, err
		}
		for i, o := range g.Outputs {
			gn.store(o.Value, gn.outPtr[i], x.getLin(a), ovs[i])
		}
		delete(gn.bound, tt.view)
		gn.reset()
		b.place(skip)
	}
	b.ins("bar.sync", "0") // the next tile overwrites the buffer
	next()
	if gn.err != nil {
		return "", Launch{}, gn.err
	}
	l := Launch{Grid: [3]int{max(1, min(tiles, maxLoopBlocks)), 1, 1}, Block: [3]int{tileDim * tileRows, 1, 1}, Params: args}
	return b.text(), l, nil
}

// usesOf maps each live value of g to the live values that take it as an argument.
func usesOf(g *ir.Graph) map[*ir.Value][]*ir.Value {
	uses := map[*ir.Value][]*ir.Value{}
	for _, v := range live(g) {
		for _, a := range v.Args {
			uses[a] = append(uses[a], v)
		}
	}
	return uses
}

// readAtIndex reports whether every consumer of v, transitively, is elementwise at its
// argument's shape (or, with reshapes, a reshape), so that v is read only at the index of the
// kernel's outputs: the same coordinates, or with reshapes the same linear position.
func readAtIndex(uses map[*ir.Value][]*ir.Value, v *ir.Value, reshapes bool) bool {
	for _, c := range uses[v] {
		same := (ops.ClassOf(c.Op) == ops.Elementwise || c.Op == "select") && c.Type.Shape.Equal(v.Type.Shape)
		if !same && !(reshapes && c.Op == "reshape") || !readAtIndex(uses, c, reshapes) {
			return false
		}
	}
	return true
}

// memClassShared is the register class a value of dtype d travels through shared memory in.
func memClassShared(d ir.DType) regClass {
	if d == ir.Bool {
		return rU32
	}
	return classOf(d)
}
