package artifact

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// Dim is one symbolic dim of a plan (version 4): a size in [Lo, Hi] chosen by each run's inputs.
type Dim struct {
	Name string `json:"name"`
	Lo   int    `json:"lo"`
	Hi   int    `json:"hi"`
}

// Work is how a symbolic launch's grid follows from the sizes. Elements (an expression over the
// dims) is the size n the kernel also receives as its ArgSize parameter. A loop kernel (Tile 0)
// takes n elements in groups of Vector, so max(1, n/Vector, n%Vector) work items, over blocks of
// Block[0] threads, at most MaxBlocks blocks: grid.x = min(ceil(work / Block[0]), MaxBlocks). A
// row kernel (Tile > 0) takes n units (rows, or a GEMM's M) in tiles of Tile per block along grid
// axis Axis: grid[Axis] = min(max(1, ceil(n / Tile)), MaxBlocks), its other axes those of Grid.
type Work struct {
	Elements  string `json:"elements"`
	Vector    int    `json:"vector"`
	MaxBlocks int    `json:"max_blocks"`
	Tile      int    `json:"tile,omitempty"`
	Axis      int    `json:"axis,omitempty"`
}

// Grid is the launch's grid at size n, for a kernel whose grid at the bound is grid and whose
// block is block.
func (w *Work) Grid(n int64, grid, block [3]int) [3]int {
	if w.Tile > 0 {
		grid[w.Axis] = int(min(max(1, (n+int64(w.Tile)-1)/int64(w.Tile)), int64(w.MaxBlocks)))
		return grid
	}
	v := int64(w.Vector)
	work := max(1, n/v, n%v)
	return [3]int{int(min((work+int64(block[0])-1)/int64(block[0]), int64(w.MaxBlocks))), 1, 1}
}

// Ranges returns the plan's dims as sym intervals.
func (p *Plan) Ranges() sym.Ranges {
	r := sym.Ranges{}
	for _, d := range p.Dims {
		r[d.Name] = sym.Interval{Lo: int64(d.Lo), Hi: int64(d.Hi)}
	}
	return r
}

// ParseSize parses one of the plan's size expressions; every name in it must be a dim of the plan.
func (p *Plan) ParseSize(s string) (sym.Expr, error) {
	e, err := sym.Parse(s)
	if err != nil {
		return sym.Expr{}, fmt.Errorf("size %q: %v", s, err)
	}
	r := p.Ranges()
	for _, name := range e.Symbols() {
		if _, ok := r[name]; !ok {
			return sym.Expr{}, fmt.Errorf("size %q names %s, which is not a dim of the plan", s, name)
		}
	}
	return e, nil
}

// validateDims checks the version 4 fields: dims well formed, every size expression parses over
// them and stays within [0, the axis's bound] (so the buffers laid out at the bound hold every
// run), and launches with Work take their element count as an argument.
func (p *Plan) validateDims() error {
	if len(p.Dims) > 0 && p.Version < Version {
		return fmt.Errorf("dims need plan version %d, this plan is version %d", Version, p.Version)
	}
	seen := map[string]bool{}
	for _, d := range p.Dims {
		if !sym.ValidName(d.Name) || seen[d.Name] || d.Lo < 0 || d.Lo > d.Hi || d.Hi > 1<<31-1 {
			return fmt.Errorf("dim %q in [%d,%d]: want a new name and 0 <= lo <= hi < 2^31", d.Name, d.Lo, d.Hi)
		}
		seen[d.Name] = true
	}
	r := p.Ranges()
	for _, set := range [][]IOBuffer{p.Inputs, p.Outputs} {
		for _, b := range set {
			if b.Sym == nil {
				continue
			}
			if len(p.Dims) == 0 {
				return fmt.Errorf("%s has symbolic sizes and the plan has no dims", b.Name)
			}
			typ, err := ir.ParseType(b.Type)
			if err != nil {
				return fmt.Errorf("%s: bad type %q: %v", b.Name, b.Type, err)
			}
			t := typ.Shape
			if len(b.Sym) != len(t) {
				return fmt.Errorf("%s: %d symbolic sizes for type %s", b.Name, len(b.Sym), b.Type)
			}
			for i, s := range b.Sym {
				e, err := p.ParseSize(s)
				if err != nil {
					return fmt.Errorf("%s dim %d: %v", b.Name, i, err)
				}
				if lo, hi, err := e.Range(r); err != nil || lo < 0 || hi != int64(t[i]) {
					return fmt.Errorf("%s dim %d: %s is not within [0, %d] over the dims", b.Name, i, s, t[i])
				}
			}
		}
	}
	for _, k := range p.Kernels {
		var size *Arg
		for i, a := range k.Args {
			if a.Kind != ArgSize {
				continue
			}
			if len(p.Dims) == 0 {
				return fmt.Errorf("kernel %s argument %d: a size argument in a plan without dims", k.Name, i)
			}
			if _, err := p.ParseSize(a.Expr); err != nil {
				return fmt.Errorf("kernel %s argument %d: %v", k.Name, i, err)
			}
			size = &k.Args[i]
		}
		if k.Work == nil {
			continue
		}
		if size == nil || size.Expr != k.Work.Elements || k.Work.Vector < 1 || k.Work.MaxBlocks < 1 {
			return fmt.Errorf("kernel %s: work %+v needs a size argument of its element count and positive vector and max_blocks", k.Name, *k.Work)
		}
		if k.Work.Tile < 0 || k.Work.Axis < 0 || k.Work.Axis > 2 || k.Work.Tile == 0 && k.Work.Axis != 0 {
			return fmt.Errorf("kernel %s: work %+v: want tile >= 0 and a grid axis 0 to 2 (0 for a loop)", k.Name, *k.Work)
		}
	}
	return nil
}
