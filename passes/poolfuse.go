package passes

import (
	"slices"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Rule (d) extended to pooling: a conv2d's epilogue may end in a max_pool2d or avg_pool2d whose
// windows tile the convolution's output exactly, so the kernel pools before it stores and the
// pre-pool values never reach memory (unless another kernel or the caller needs them: then the
// kernel writes them too). Codegen enumerates the GEMM's rows window-major, so the pixels of one
// window are consecutive rows held by one thread.

// PoolWindow returns the window [kh, kw] of pooling p when its windows tile its operand exactly:
// stride equal to the window (or absent), no padding, the operand's height and width multiples
// of the window, and a window of 2 or 4 elements (the GEMM rows a tiled conv template keeps
// together in one thread). ok is false otherwise.
func PoolWindow(p *ir.Value) (win [2]int, ok bool) {
	if p.Op != "max_pool2d" && p.Op != "avg_pool2d" || len(p.Args) != 1 {
		return win, false
	}
	k := p.Attrs.Ints("kernel")
	s := p.Args[0].Type.Shape
	if len(k) != 2 || s.Rank() != 4 {
		return win, false
	}
	if st := p.Attrs.Ints("stride"); st != nil && !slices.Equal(st, k) {
		return win, false
	}
	if pad := p.Attrs.Ints("padding"); pad != nil && slices.ContainsFunc(pad, func(x int) bool { return x != 0 }) {
		return win, false
	}
	if n := k[0] * k[1]; n != 2 && n != 4 || s[2]%k[0] != 0 || s[3]%k[1] != 0 {
		return win, false
	}
	return [2]int{k[0], k[1]}, true
}

// pooledConv returns the conv2d whose epilogue can end in pooling p, or nil: p's windows tile
// (PoolWindow), its operand is computed from exactly one conv2d of the operand's shape through
// elementwise ops of that shape, and the convolution takes a tiled template (f32, f16 or bf16,
// operands read from memory as they are, at most 65535 groups), the templates that implement
// the pooled epilogue.
func pooledConv(p *ir.Value) *ir.Value {
	if _, ok := PoolWindow(p); !ok {
		return nil
	}
	shape := p.Args[0].Type.Shape
	var convs []*ir.Value
	seen := map[*ir.Value]bool{}
	var walk func(v *ir.Value)
	walk = func(v *ir.Value) {
		if seen[v] || !v.Type.Shape.Equal(shape) {
			return
		}
		seen[v] = true
		switch {
		case v.Op == "conv2d":
			convs = append(convs, v)
		case ops.ClassOf(v.Op) == ops.Elementwise:
			for _, a := range v.Args {
				walk(a)
			}
		}
	}
	walk(p.Args[0])
	if len(convs) != 1 {
		return nil
	}
	c := convs[0]
	if d := c.Type.DType; d != ir.F32 && d != ir.F16 && d != ir.BF16 || c.Attrs.Int("groups", 1) > 65535 {
		return nil
	}
	for _, a := range c.Args {
		if literal(a) || isView(a.Op) || literalOnly(a) {
			return nil // copied or applied inside the kernel: the direct template
		}
	}
	return c
}

// literalOnly reports whether v is elementwise arithmetic on literals alone.
func literalOnly(v *ir.Value) bool {
	if ops.ClassOf(v.Op) != ops.Elementwise {
		return false
	}
	for _, a := range v.Args {
		if !literal(a) && !literalOnly(a) {
			return false
		}
	}
	return true
}

// poolEpilogues merges each pooling's loop kernel into the contraction kernel computing its
// operand when pooledConv allows, the loop kernel computes nothing but the pooling and
// elementwise ops of its shape (side operands from memory), the contraction kernel does not pool
// already, and the merge stays within the bounds and creates no cycle.
func (f *fuser) poolEpilogues() {
	for _, p := range f.g.Values {
		c := pooledConv(p)
		if c == nil {
			continue
		}
		pg, cg := f.home[p], f.home[c]
		if pg == nil || cg == nil || pg == cg || pg.kind != Loop || cg.kind != Contraction || cg.contraction != c ||
			!cg.members[p.Args[0]] || !pg.space.Equal(p.Type.Shape) {
			continue
		}
		ok := true
		for w := range pg.members {
			ok = ok && (w == p || ops.ClassOf(w.Op) == ops.Elementwise && w.Type.Shape.Equal(pg.space))
		}
		// The epilogue ends in one pooling: a second one (of the same values or of others
		// computed from the convolution) stays a loop kernel reading the pre-pool values.
		for w := range cg.members {
			ok = ok && w.Op != "max_pool2d" && w.Op != "avg_pool2d"
		}
		for w := range pg.views {
			ok = ok && !f.dependsOn(w, p, pg)
		}
		all := union(union(cg.members, cg.views), union(pg.members, pg.views))
		ok = ok && len(all) <= f.opt.MaxOps &&
			len(f.external(f.sortedValues(all), func(w *ir.Value) bool { return all[w] })) <= f.opt.MaxReads
		if ok {
			deps := f.groupDeps() // the grouping is the same for every h
			for _, h := range f.groups {
				ok = ok && (h == cg || h == pg || !deps.reaches(cg, h) || !deps.reaches(h, pg))
			}
		}
		if ok {
			f.merge(cg, pg)
		}
	}
}

// dependsOn reports whether w is computed from v through values of gr.
func (f *fuser) dependsOn(w, v *ir.Value, gr *group) bool {
	for _, a := range w.Args {
		if a == v || gr.has(a) && f.dependsOn(a, v, gr) {
			return true
		}
	}
	return false
}

// sortedValues lists a set of values in definition order.
func (f *fuser) sortedValues(set map[*ir.Value]bool) []*ir.Value {
	vs := make([]*ir.Value, 0, len(set))
	for w := range set {
		vs = append(vs, w)
	}
	slices.SortFunc(vs, func(a, b *ir.Value) int { return f.index[a] - f.index[b] })
	return vs
}

// kernelPool returns the pooling a contraction kernel's epilogue ends in, or nil.
func kernelPool(k *Kernel) *ir.Value {
	if k.Kind != Contraction {
		return nil
	}
	for _, v := range k.Body.Values {
		if v.Op == "max_pool2d" || v.Op == "avg_pool2d" {
			return v
		}
	}
	return nil
}
