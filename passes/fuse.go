package passes

import (
	"container/heap"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// FusionOptions bound what one kernel may hold. Zero fields take the defaults.
type FusionOptions struct {
	MaxOps   int // ops in one kernel (default 64)
	MaxReads int // buffers one kernel reads (default 16)
	MaxRow   int // elements of a row a block keeps on chip (default 8192: 32 KB of f32); longer rows are streamed (Kernel.RowPasses)
	// Persistent kernels (persist.go): a run of at least PersistStages kernels (default 3;
	// negative: none) becomes one single-block kernel when every stage's space has at most
	// PersistElems elements (default 8192), the run computes at most PersistFlops (default 2^22,
	// a few µs of one SM) and its values between stages fit PersistShared bytes of shared memory
	// (default 48 KB, the static limit).
	PersistStages int
	PersistElems  int
	PersistFlops  int64
	PersistShared int
	// PersistRuns, when not nil, makes the persist pass form exactly these runs and no other
	// (persistruns.go): the costs of a graph with dims at sizes below its bound, whose build
	// formed them at the bound.
	PersistRuns *[]PersistRun
}

func (o FusionOptions) withDefaults() FusionOptions {
	if o.MaxOps == 0 {
		o.MaxOps = 64
	}
	if o.MaxReads == 0 {
		o.MaxReads = 16
	}
	if o.MaxRow == 0 {
		o.MaxRow = 8192
	}
	if o.PersistStages == 0 {
		o.PersistStages = 3
	}
	if o.PersistElems == 0 {
		o.PersistElems = 8192
	}
	if o.PersistFlops == 0 {
		o.PersistFlops = 1 << 22
	}
	if o.PersistShared == 0 {
		o.PersistShared = 48 << 10
	}
	return o
}

// group is a kernel being formed. Members are the values it computes (each value is a member of
// at most one group); views are reshapes, transposes, broadcasts and slices it applies by index
// arithmetic (and index-only values it recomputes), which several groups may share. A member's
// views join with it, before they are visited, so that they count against the bounds.
type group struct {
	kind        Kind
	space       ir.Shape
	axes        []int // row groups: the reduced axes of space
	members     map[*ir.Value]bool
	views       map[*ir.Value]bool
	prologue    map[*ir.Value]bool // contraction groups: views that feed the contraction's operands
	outputs     map[*ir.Value]bool // members needed outside the group
	contraction *ir.Value
	first       int // smallest definition index of a member, for a deterministic order
}

func (gr *group) has(v *ir.Value) bool { return gr.members[v] || gr.views[v] }

// hasReduction reports whether a reduction is a member of gr: a row group that becomeRow formed
// has none until the reduction joins.
func (gr *group) hasReduction() bool {
	for w := range gr.members {
		if ops.ClassOf(w.Op) == ops.Reduce {
			return true
		}
	}
	return false
}

// size is the number of ops gr computes; each counts against MaxOps.
func (gr *group) size() int { return unionLen(gr.members, gr.views) }

type fuser struct {
	g      *ir.Graph
	opt    FusionOptions
	eager  bool // one kernel per op: the unfused baseline
	index  map[*ir.Value]int
	users  map[*ir.Value][]*ir.Value
	output map[*ir.Value]bool
	home   map[*ir.Value]*group
	dups   map[*ir.Value][]*group
	groups []*group

	indexMemo map[*ir.Value]bool
	paramMemo map[*ir.Value]bool

	siblingTests int // pairs of groups siblings tested structurally (kind, space, size, paths)
}

func fusePass(st *State) error {
	kg, err := buildKernels(st.Graph, st.opt.Fusion, false)
	st.Kernels = kg
	return err
}

// eagerKernels is the unfused baseline: one kernel per op (constants are folded into their
// users as literals).
// A variable, so that a test can count the builds.
var eagerKernels = func(g *ir.Graph) (*KernelGraph, error) { return buildKernels(g, FusionOptions{}, true) }

func buildKernels(g *ir.Graph, opt FusionOptions, eager bool) (*KernelGraph, error) {
	f := newFuser(g, opt, eager)
	f.group()
	return f.kernels()
}

func newFuser(g *ir.Graph, opt FusionOptions, eager bool) *fuser {
	f := &fuser{g: g, opt: opt.withDefaults(), eager: eager, index: map[*ir.Value]int{}, users: map[*ir.Value][]*ir.Value{},
		output: map[*ir.Value]bool{}, home: map[*ir.Value]*group{}, dups: map[*ir.Value][]*group{}, indexMemo: map[*ir.Value]bool{},
		paramMemo: map[*ir.Value]bool{}}
	for i, v := range g.Values {
		f.index[v] = i
		for _, a := range v.Args {
			if !slices.Contains(f.users[a], v) {
				f.users[a] = append(f.users[a], v)
			}
		}
	}
	for _, o := range g.Outputs {
		f.output[o.Value] = true
	}
	return f
}

// group forms the groups: each value's, last first, then the fusions across groups.
func (f *fuser) group() {
	for i := len(f.g.Values) - 1; i >= 0; i-- {
		f.assign(f.g.Values[i])
	}
	if !f.eager {
		f.poolEpilogues()
		f.siblings()
	}
}

// inline values are recomputed wherever they are used: literals and iota cost nothing to make.
func (f *fuser) inline(v *ir.Value) bool {
	return (v.Op == "constant" || v.Op == "iota" && !f.eager) && !f.feedsCustom(v)
}

// indexOnly reports whether v is cheap arithmetic on literals and indices alone (a causal mask
// from two iotas): every kernel that needs it recomputes it rather than reading it.
func (f *fuser) indexOnly(v *ir.Value) bool {
	if ok, known := f.indexMemo[v]; known {
		return ok
	}
	ok := !expensive(v) && ops.ClassOf(v.Op) == ops.Elementwise
	for _, a := range v.Args {
		ok = ok && (f.inline(a) || f.indexOnly(a))
	}
	f.indexMemo[v] = ok
	return ok
}

// paramOnly reports whether v is computed from parameters and literals alone, so it changes
// only when the weights do (BatchNorm's scale rsqrt(running_var+eps)·weight and shift).
func (f *fuser) paramOnly(v *ir.Value) bool {
	if v.Op == ir.OpParam {
		return true
	}
	if ok, known := f.paramMemo[v]; known {
		return ok
	}
	ok := v.Op != ir.OpInput && len(v.Args) > 0
	for _, a := range v.Args {
		ok = ok && (f.inline(a) || f.paramOnly(a))
	}
	f.paramMemo[v] = ok
	return ok
}

// assign decides where v is computed. Values are visited from last to first, so every user of
// v already has its place.
func (f *fuser) assign(v *ir.Value) {
	if v.Op == ir.OpInput || v.Op == ir.OpParam || f.inline(v) && !f.output[v] {
		return
	}
	cgs := f.consumerGroups(v)
	if len(cgs) == 0 && !f.output[v] {
		return // dead
	}
	if f.quantizedWeight(v, cgs) {
		return
	}
	if f.dupable(v) && len(cgs) > 0 {
		// Every kernel that has room applies v itself; the others (full ones, and contractions
		// whose operand it is, unless it is a view) read it from the kernel placed below.
		var rest []*group
		for _, gr := range cgs {
			feeds := gr.kind == Contraction && f.feedsContraction(v, gr)
			if feeds && (!isView(v.Op) || f.permutesConvWeight(v, gr)) || !gr.views[v] && !f.fits(v, gr) {
				delete(gr.views, v)
				rest = append(rest, gr)
				continue
			}
			f.dups[v] = append(f.dups[v], gr)
			gr.views[v] = true
			if feeds {
				gr.prologue[v] = true
			}
		}
		if len(rest) == 0 {
			return
		}
		cgs = rest
	}
	if ops.ClassOf(v.Op) == ops.Custom || attentionKernelOp(v.Op) || v.Op == ops.UpdateSliceOp {
		f.alone(v)
		return
	}
	if !f.eager {
		for _, gr := range cgs {
			if f.canJoin(v, gr, cgs) {
				f.join(v, gr, len(cgs) > 1 || f.output[v])
				return
			}
		}
	}
	gr := &group{kind: Loop, space: v.Type.Shape, members: map[*ir.Value]bool{}, views: map[*ir.Value]bool{},
		prologue: map[*ir.Value]bool{}, outputs: map[*ir.Value]bool{}, first: f.index[v]}
	f.groups = append(f.groups, gr)
	f.join(v, gr, true)
}

func (f *fuser) join(v *ir.Value, gr *group, isOutput bool) {
	// canJoin counted all of v's closure into an existing group; a new group takes what fits.
	fresh := gr.size() == 0
	gr.members[v] = true
	f.closure(v, gr, func(w *ir.Value) bool {
		ok := !fresh || f.fits(w, gr)
		if ok {
			gr.views[w] = true // no entry otherwise: size and reads count the keys
		}
		return ok
	})
	switch ops.ClassOf(v.Op) {
	case ops.Contraction:
		gr.kind, gr.contraction = Contraction, v
	case ops.Reduce:
		gr.kind, gr.space, gr.axes = Row, v.Args[0].Type.Shape, v.Attrs.Ints("axes")
	}
	if isOutput {
		gr.outputs[v] = true
	}
	gr.first = min(gr.first, f.index[v])
	f.home[v] = gr
}

// dupable reports whether v is applied by every kernel that uses it rather than read from
// memory: views, and cheap values of literals and indices.
func (f *fuser) dupable(v *ir.Value) bool {
	return !f.eager && !f.output[v] && (isView(v.Op) || f.indexOnly(v))
}

// closure lists the values gr takes on with v, nearest first: v's dupable operands not in gr
// that accept takes, and theirs. Only views lead to a contraction's operands.
func (f *fuser) closure(v *ir.Value, gr *group, accept func(*ir.Value) bool) []*ir.Value {
	type item struct {
		w       *ir.Value
		operand bool // w is, or feeds through views, a contraction's operand
	}
	var out []*ir.Value
	queue := []item{{v, ops.ClassOf(v.Op) == ops.Contraction}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		for _, a := range it.w.Args {
			if gr.has(a) || slices.Contains(out, a) || !f.dupable(a) || it.operand && !isView(a.Op) || !accept(a) {
				continue
			}
			out = append(out, a)
			queue = append(queue, item{a, it.operand})
		}
	}
	return out
}

// fits reports whether gr has room for dupable v, and applying v reads no more buffers than the
// bound (or than gr reads already: a kernel of one op reads what that op needs).
func (f *fuser) fits(v *ir.Value, gr *group) bool {
	if gr.kind == Attention { // the template reads its operands through strided views in place
		_, _, _, strided := ops.StridedView(v)
		return isView(v.Op) && strided
	}
	if gr.kind == Update {
		return updateView(v, gr)
	}
	return !gr.kind.opaque() && gr.size() < f.opt.MaxOps && f.reads(gr, []*ir.Value{v}) <= max(f.opt.MaxReads, f.reads(gr, nil))
}

// consumerGroups lists the groups that use v, looking through shared views, earliest first.
func (f *fuser) consumerGroups(v *ir.Value) []*group {
	var gs []*group
	for _, u := range f.users[v] {
		if gr := f.home[u]; gr != nil && !slices.Contains(gs, gr) {
			gs = append(gs, gr)
		}
		for _, gr := range f.dups[u] {
			if !slices.Contains(gs, gr) {
				gs = append(gs, gr)
			}
		}
	}
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].first < gs[j].first })
	return gs
}

// usesIn lists v's users inside gr.
func (f *fuser) usesIn(v *ir.Value, gr *group) []*ir.Value {
	var us []*ir.Value
	for _, u := range f.users[v] {
		if gr.has(u) {
			us = append(us, u)
		}
	}
	return us
}

// feedsContraction reports whether v reaches gr's contraction through views in gr.
func (f *fuser) feedsContraction(v *ir.Value, gr *group) bool {
	for _, u := range f.usesIn(v, gr) {
		if u == gr.contraction || gr.prologue[u] {
			return true
		}
	}
	return false
}

// permutesConvWeight reports whether v is a view other than a reshape that gr's conv2d reads as
// its weights: the implicit-GEMM template reads the weights as they lie in memory, so a
// transposed view (a transposed convolution's flipped, channel-swapped kernel) is written out
// by the kernel that computes it, where it depends on parameters alone a bind-time kernel.
func (f *fuser) permutesConvWeight(v *ir.Value, gr *group) bool {
	c := gr.contraction
	return c != nil && c.Op == "conv2d" && v.Op != "reshape" && slices.Contains(f.usesIn(v, gr), c) && c.Args[1] == v
}

// needsMemory reports whether v reaches, through views in gr, an op that needs its operand
// in memory: the contraction, pooling or gather.
func (f *fuser) needsMemory(v *ir.Value, gr *group) bool {
	for _, u := range f.usesIn(v, gr) {
		if u == gr.contraction || ops.ClassOf(u.Op) == ops.Other || ops.ClassOf(u.Op) == ops.Custom || gr.views[u] && f.needsMemory(u, gr) {
			return true
		}
	}
	return false
}

// expensive ops are not recomputed once per element of a broadcast.
func expensive(v *ir.Value) bool {
	switch v.Op {
	case "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos", "pow", "div":
		return true
	}
	c := ops.ClassOf(v.Op)
	return c != ops.Elementwise && c != ops.Movement
}

// expanded reports whether gr evaluates v more than once per element of v: v reaches a
// broadcast that repeats elements, other than a row group's broadcast of a per-row value.
func (f *fuser) expanded(v *ir.Value, gr *group, seen map[*ir.Value]bool) bool {
	if seen[v] {
		return false
	}
	seen[v] = true
	for _, u := range f.usesIn(v, gr) {
		if u.Op == "broadcast_in_dim" && u.Type.Shape.NumElements() > v.Type.Shape.NumElements() && !(gr.kind == Row && f.rowBroadcast(u, gr)) {
			return true
		}
		if f.expanded(u, gr, seen) {
			return true
		}
	}
	return false
}

// canJoin reports whether v may be computed in gr, whose members use it; others are the other
// groups that use v and will read it from gr's output.
func (f *fuser) canJoin(v *ir.Value, gr *group, others []*group) bool {
	extra := f.closure(v, gr, func(*ir.Value) bool { return true })
	if gr.size()+1+len(extra) > f.opt.MaxOps || f.reads(gr, append(extra, v)) > f.opt.MaxReads {
		return false
	}
	outside := len(others) > 1 || f.output[v]
	if outside && !f.outputShapeOK(v, gr) {
		return false
	}
	var up map[*group]bool // found once for all of others
	for _, h := range others {
		if h == gr {
			continue
		}
		if up == nil {
			up = f.upstream(gr)
		}
		if up[h] {
			return false // gr would read from h and h from gr: a cycle
		}
	}
	if f.needsMemory(v, gr) || gr.kind.opaque() || gr.kind == Attention || ops.ClassOf(v.Op) == ops.Custom || splitsSymbolicConcat(v, gr) {
		return false
	}
	// A parameter-only value that gr would evaluate once per element of a broadcast (a
	// BatchNorm's per-channel scale and shift, spread over every pixel) is computed by a
	// kernel of its own, over its own elements, which the bindtime pass runs when weights are
	// bound: per run gr then reads the results instead of the parameters they come from.
	if f.paramOnly(v) && f.expanded(v, gr, map[*ir.Value]bool{}) {
		return false
	}
	class := ops.ClassOf(v.Op)
	ok := false
	switch gr.kind {
	case Loop:
		switch class {
		case ops.Contraction:
			ok = f.epilogueOK(v, gr)
		case ops.Reduce:
			ok = f.rowOK(gr, v)
		default:
			expands := f.expanded(v, gr, map[*ir.Value]bool{})
			// A contraction's elementwise tail that gr would repeat per element of a broadcast
			// (the BatchNorm and ReLU before a nearest upsampling) goes to the contraction's
			// epilogue instead, evaluated once per element, as in the Row case below (rule d).
			ok = !(expensive(v) && expands) && !(expands && class == ops.Elementwise && f.tailOfContraction(v)) || f.becomeRow(v, gr)
		}
	case Row:
		// An elementwise tail of a contraction goes to the contraction's store (rule d), not to
		// the reduction that reads it.
		ok = (class == ops.Elementwise && !f.tailOfContraction(v) || class == ops.Movement || class == ops.Reduce || v.Op == "gather") && f.rowOK(gr, v) &&
			!(expensive(v) && class != ops.Reduce && f.expanded(v, gr, map[*ir.Value]bool{}))
	case Contraction:
		ok = (class == ops.Elementwise || class == ops.Movement) && !f.feedsContraction(v, gr) &&
			!(expensive(v) && f.expanded(v, gr, map[*ir.Value]bool{}))
	}
	return ok
}

// becomeRow handles a per-row value (computed from a reduction, like layer norm's rsqrt of the
// variance) that loop group gr spreads over rows it iterates: gr becomes a row group over the
// reduction's rows, so that the value is computed once per row; the reduction joins it later.
func (f *fuser) becomeRow(v *ir.Value, gr *group) bool {
	r := f.rowSource(v, map[*ir.Value]bool{})
	if r == nil || !gr.space.Equal(r.Args[0].Type.Shape) {
		return false
	}
	saved := *gr
	gr.kind, gr.axes = Row, r.Attrs.Ints("axes")
	if !f.expanded(v, gr, map[*ir.Value]bool{}) && f.rowOK(gr, v) {
		return true
	}
	*gr = saved
	return false
}

// rowSource finds a reduction that v is computed from by elementwise ops of v's shape.
func (f *fuser) rowSource(v *ir.Value, seen map[*ir.Value]bool) *ir.Value {
	if seen[v] {
		return nil
	}
	seen[v] = true
	for _, a := range v.Args {
		if !a.Type.Shape.Equal(v.Type.Shape) {
			continue
		}
		switch ops.ClassOf(a.Op) {
		case ops.Reduce:
			return a
		case ops.Elementwise:
			if r := f.rowSource(a, seen); r != nil {
				return r
			}
		}
	}
	return nil
}

// tailOfContraction reports whether elementwise v computes on a contraction's result through a
// chain of single-use elementwise ops of v's shape: a chain the contraction's epilogue can hold.
func (f *fuser) tailOfContraction(v *ir.Value) bool {
	for _, a := range v.Args {
		if len(f.users[a]) != 1 || !a.Type.Shape.Equal(v.Type.Shape) {
			continue
		}
		switch ops.ClassOf(a.Op) {
		case ops.Contraction:
			return true
		case ops.Elementwise:
			if f.tailOfContraction(a) {
				return true
			}
		}
	}
	return false
}

// outputShapeOK: a value the group writes must be indexed by the group's iteration space. A row
// group writes per-row values only once its reduction is a member: becomeRow made it a row group
// ahead of the reduction, which the bounds may still keep out, and then it is a loop kernel
// again (kernels), which writes nothing but its space.
func (f *fuser) outputShapeOK(v *ir.Value, gr *group) bool {
	s := v.Type.Shape
	if gr.kind == Row && gr.hasReduction() {
		keep, drop := rowShapes(gr.space, gr.axes)
		return s.Equal(gr.space) || s.Equal(keep) || s.Equal(drop)
	}
	return s.Equal(gr.space)
}

// reads counts the distinct buffers gr would read with vs added.
func (f *fuser) reads(gr *group, vs []*ir.Value) int {
	vals := slices.Concat(vs, slices.Collect(maps.Keys(gr.members)), slices.Collect(maps.Keys(gr.views)))
	return len(f.external(vals, func(w *ir.Value) bool { return gr.has(w) || slices.Contains(vs, w) }))
}

// external returns the values that vals use and that are neither in the kernel (has) nor
// literals: the buffers it reads.
func (f *fuser) external(vals []*ir.Value, has func(*ir.Value) bool) map[*ir.Value]bool {
	ext := map[*ir.Value]bool{}
	for _, w := range vals {
		for _, a := range w.Args {
			if !has(a) && !f.inline(a) {
				ext[a] = true
			}
		}
	}
	return ext
}

// epilogueOK reports whether loop group gr can become the epilogue of contraction c: every value
// computed from c is elementwise over c's shape, and gr holds no pooling or gather.
func (f *fuser) epilogueOK(c *ir.Value, gr *group) bool {
	if !gr.space.Equal(c.Type.Shape) {
		return false
	}
	for w := range gr.members {
		if ops.ClassOf(w.Op) == ops.Other {
			return false
		}
	}
	ok := true
	var walk func(v *ir.Value)
	walk = func(v *ir.Value) {
		for _, u := range f.usesIn(v, gr) {
			if ops.ClassOf(u.Op) != ops.Elementwise || !u.Type.Shape.Equal(c.Type.Shape) {
				ok = false
				return
			}
			walk(u)
		}
	}
	walk(c)
	return ok
}

// rowShapes returns the per-row shapes of space reduced over axes: with the axes kept as size 1,
// and dropped.
func rowShapes(space ir.Shape, axes []int) (keep, drop ir.Shape) {
	keep, drop = ir.Shape{}, ir.Shape{}
	for i, d := range space {
		if slices.Contains(axes, i) {
			keep = append(keep, 1)
		} else {
			keep = append(keep, d)
			drop = append(drop, d)
		}
	}
	return keep, drop
}

// rowBroadcast reports whether broadcast u spreads a per-row value of row group gr over its row.
func (f *fuser) rowBroadcast(u *ir.Value, gr *group) bool {
	keep, drop := rowShapes(gr.space, gr.axes)
	in, dims := u.Args[0].Type.Shape, u.Attrs.Ints("dims")
	if !u.Type.Shape.Equal(gr.space) {
		return false
	}
	if in.Equal(keep) {
		return isIdentity(dims)
	}
	if !in.Equal(drop) {
		return false
	}
	j := 0
	for i := range gr.space {
		if !slices.Contains(gr.axes, i) {
			if j >= len(dims) || dims[j] != i {
				return false
			}
			j++
		}
	}
	return true
}

// rowOK reports whether gr with v added is a valid row group: every reduction folds the same axes
// of the same shape (a row fits on chip), and every value that a reduction depends on or that
// depends on one is either a full row element or a per-row value, moved only by spreading
// per-row values over their row.
func (f *fuser) rowOK(gr *group, v *ir.Value) bool {
	space, axes := gr.space, gr.axes
	all := []*ir.Value{v}
	for w := range gr.members {
		all = append(all, w)
	}
	for w := range gr.views {
		all = append(all, w)
	}
	in := func(w *ir.Value) bool { return w == v || gr.has(w) }
	var reduces []*ir.Value
	for _, w := range all {
		if ops.ClassOf(w.Op) == ops.Reduce {
			reduces = append(reduces, w)
		}
	}
	if gr.kind != Row {
		if len(reduces) != 1 {
			return false
		}
		space, axes = reduces[0].Args[0].Type.Shape, reduces[0].Attrs.Ints("axes")
	}
	for _, r := range reduces {
		if !r.Args[0].Type.Shape.Equal(space) || !slices.Equal(r.Attrs.Ints("axes"), axes) {
			return false
		}
	}
	// Values computed from a reduction must be per-row or full-row values, moved only by
	// spreading per-row values over their row. The reductions' producers and side values are
	// computed per element by index arithmetic, as in a loop kernel.
	down := map[*ir.Value]bool{}
	var walk func(w *ir.Value)
	walk = func(w *ir.Value) {
		for _, u := range f.users[w] {
			if in(u) && !down[u] {
				down[u] = true
				walk(u)
			}
		}
	}
	for _, r := range reduces {
		walk(r)
	}
	keep, drop := rowShapes(space, axes)
	perRow := func(s ir.Shape) bool { return s.Equal(keep) || s.Equal(drop) }
	probe := &group{kind: Row, space: space, axes: axes}
	for _, w := range all {
		class := ops.ClassOf(w.Op)
		switch {
		case class == ops.Contraction || class == ops.Other && w.Op != "gather":
			return false // pooling and contractions have kernels of their own kind
		case !down[w] || class == ops.Reduce:
			continue
		}
		s := w.Type.Shape
		switch {
		case !s.Equal(space) && !perRow(s), class == ops.Other:
			return false
		case class == ops.Movement && !(w.Op == "broadcast_in_dim" && f.rowBroadcast(w, probe) || w.Op == "reshape" && perRow(s) && perRow(w.Args[0].Type.Shape)):
			return false
		}
	}
	for w := range gr.outputs {
		if s := w.Type.Shape; !s.Equal(space) && !perRow(s) {
			return false
		}
	}
	return true
}

// siblings merges groups that iterate the same space, read a common buffer and do not depend on
// each other into one multi-output kernel.
//
// Each merge restarts the search, so the first mergeable pair in (read, group, group) order wins
// as before, but a pair that failed the structural test (kind, space, size, a path between the
// two) is not asked again: a merge only grows the surviving group and only adds paths (a path
// through either half runs through the merged group), so such a failure stays a failure while
// both groups exist. The reads test is asked again, since a merge can turn a buffer the survivor
// read into one of its views. A group's reads are kept until it absorbs another.
func (f *fuser) siblings() {
	failed := map[[2]*group]bool{}
	reads := map[*group]map[*ir.Value]bool{}
	readsOf := func(gr *group) map[*ir.Value]bool {
		r, ok := reads[gr]
		if !ok {
			r = f.groupReads(gr)
			reads[gr] = r
		}
		return r
	}
	for changed := true; changed; {
		changed = false
		byRead := map[*ir.Value][]*group{}
		for _, gr := range f.groups {
			for r := range readsOf(gr) {
				byRead[r] = append(byRead[r], gr)
			}
		}
		keys := make([]*ir.Value, 0, len(byRead))
		for r := range byRead {
			keys = append(keys, r)
		}
		sort.Slice(keys, func(i, j int) bool { return f.index[keys[i]] < f.index[keys[j]] })
		var deps *groupDeps // built on the first path question: the grouping changes only by the merge that ends this pass
	search:
		for _, r := range keys {
			gs := byRead[r]
			for i, a := range gs {
				for _, b := range gs[i+1:] {
					if failed[[2]*group{a, b}] {
						continue
					}
					f.siblingTests++
					if a.kind == Contraction || a.kind.opaque() || a.kind == Attention || a.kind != b.kind || !a.space.Equal(b.space) || !slices.Equal(a.axes, b.axes) ||
						unionLen(a.members, a.views, b.members, b.views) > f.opt.MaxOps {
						failed[[2]*group{a, b}] = true
						continue
					}
					if deps == nil {
						deps = f.groupDeps()
					}
					if deps.reaches(a, b) || deps.reaches(b, a) {
						failed[[2]*group{a, b}] = true
						continue
					}
					if len(union(readsOf(a), readsOf(b))) > f.opt.MaxReads {
						continue
					}
					f.merge(a, b)
					delete(reads, a)
					delete(reads, b)
					changed = true
					break search
				}
			}
		}
	}
}

func union(a, b map[*ir.Value]bool) map[*ir.Value]bool {
	u := map[*ir.Value]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

// unionLen is len of the union of sets, without building it.
func unionLen(sets ...map[*ir.Value]bool) int {
	n := 0
	for i, s := range sets {
	next:
		for k := range s {
			for _, t := range sets[:i] {
				if t[k] {
					continue next
				}
			}
			n++
		}
	}
	return n
}

// groupReads returns the values gr reads from memory.
func (f *fuser) groupReads(gr *group) map[*ir.Value]bool {
	return f.external(f.groupValues(gr), gr.has)
}

func (f *fuser) merge(a, b *group) {
	for w := range b.members {
		a.members[w] = true
		f.home[w] = a
	}
	for w := range b.views {
		a.views[w] = true
		f.dups[w] = slices.DeleteFunc(f.dups[w], func(g *group) bool { return g == b })
		if !slices.Contains(f.dups[w], a) {
			f.dups[w] = append(f.dups[w], a)
		}
	}
	for w := range b.outputs {
		a.outputs[w] = true
	}
	a.first = min(a.first, b.first)
	f.groups = slices.DeleteFunc(f.groups, func(g *group) bool { return g == b })
}

// groupValues lists everything gr computes, with the literals it uses, in definition order.
func (f *fuser) groupValues(gr *group) []*ir.Value {
	set := map[*ir.Value]bool{}
	var add func(w *ir.Value)
	add = func(w *ir.Value) {
		if set[w] {
			return
		}
		set[w] = true
		for _, a := range w.Args {
			if f.inline(a) {
				add(a)
			}
		}
	}
	for w := range gr.members {
		add(w)
	}
	for w := range gr.views {
		add(w)
	}
	vs := make([]*ir.Value, 0, len(set))
	for w := range set {
		vs = append(vs, w)
	}
	sort.Slice(vs, func(i, j int) bool { return f.index[vs[i]] < f.index[vs[j]] })
	return vs
}

// kernels orders the groups topologically (earliest first among the ready ones) and builds the
// kernel graph.
func (f *fuser) kernels() (*KernelGraph, error) {
	kg := &KernelGraph{Name: f.g.Name, Bounds: f.opt}
	buf := map[*ir.Value]*Buffer{}
	used := map[string]bool{}
	for _, v := range f.g.Values {
		if v.Op == ir.OpInput || v.Op == ir.OpParam {
			kind := InputBuffer
			if v.Op == ir.OpParam {
				kind = ParamBuffer
			}
			b := &Buffer{Name: v.Name, Kind: kind, Type: v.Type}
			buf[v] = b
			used[v.Name] = true
			kg.Buffers = append(kg.Buffers, b)
		}
	}
	unique := func(name string) string {
		n := name
		for i := 1; used[n]; i++ {
			n = fmt.Sprintf("%s_%d", name, i)
		}
		used[n] = true
		return n
	}
	// Output buffers, one per graph output; a value output under several names is written to each.
	outBufs := map[*ir.Value][]*Buffer{}
	for _, o := range f.g.Outputs {
		b := &Buffer{Name: unique(o.Name), Kind: OutputBuffer, Type: o.Value.Type}
		kg.Outputs = append(kg.Outputs, b)
		outBufs[o.Value] = append(outBufs[o.Value], b)
	}
	// Outputs that are inputs or parameters are copied by a kernel of their own.
	copied := map[*ir.Value]bool{}
	for _, o := range f.g.Outputs {
		v := o.Value
		if !copied[v] && (v.Op == ir.OpInput || v.Op == ir.OpParam) {
			copied[v] = true
			gr := &group{kind: Loop, space: v.Type.Shape, members: map[*ir.Value]bool{v: true}, views: map[*ir.Value]bool{},
				outputs: map[*ir.Value]bool{v: true}, first: len(f.g.Values)}
			f.groups = append(f.groups, gr) // a kernel that only copies v
		}
	}
	order, err := f.topoGroups()
	if err != nil {
		return nil, err
	}
	for _, gr := range order {
		vals := f.groupValues(gr)
		if gr.kind == Row && !gr.hasReduction() {
			// becomeRow expected a reduction that a size bound then kept out.
			gr.kind, gr.axes = Loop, nil
		}
		k := &Kernel{Kind: gr.kind, Space: gr.space.Clone(), Axes: slices.Clone(gr.axes), Origins: map[*ir.Value]*ir.Value{}}
		if gr.kind == Contraction {
			k.Space = gr.contraction.Type.Shape.Clone()
		}
		body := ir.NewGraph("kernel")
		m := map[*ir.Value]*ir.Value{}
		input := func(a *ir.Value) *ir.Value {
			if m[a] == nil {
				b := buf[a]
				if b == nil {
					b = outBufs[a][0]
				}
				m[a] = body.Input(b.Name, a.Type, nil)
				k.Reads = append(k.Reads, b)
			}
			return m[a]
		}
		for _, w := range vals {
			if w.Op == ir.OpInput || w.Op == ir.OpParam {
				input(w) // copy kernel
				continue
			}
			args := make([]*ir.Value, len(w.Args))
			for i, a := range w.Args {
				if set := m[a]; set != nil && (gr.has(a) || f.inline(a)) {
					args[i] = set
				} else {
					args[i] = input(a)
				}
			}
			m[w] = body.Add(w.Op, ir.Type{DType: w.Type.DType, Shape: w.Type.Shape.Clone()}, w.Attrs.Clone(), args...)
			k.Origins[m[w]] = w
			if gr.members[w] {
				k.Ops = append(k.Ops, w)
			}
		}
		for _, w := range vals {
			if !gr.members[w] {
				continue
			}
			// Other kernels read an output value from its output buffer; any other value they
			// need goes to a temp.
			writes := outBufs[w]
			if len(writes) == 0 && f.neededOutside(w, gr) {
				writes = []*Buffer{{Name: unique(fmt.Sprintf("t%d", f.index[w])), Kind: TempBuffer, Type: w.Type}}
			}
			for _, b := range writes {
				b.Writer = k
				k.Writes = append(k.Writes, b)
				body.SetOutput(b.Name, m[w])
			}
			if len(writes) > 0 && buf[w] == nil {
				buf[w] = writes[0]
			}
		}
		k.Body = body
		k.label = f.label(gr, vals)
		if k.Kind == Row {
			k.RowPasses = rowPasses(k, f.opt.MaxRow)
		}
		kg.Kernels = append(kg.Kernels, k)
		kg.Buffers = append(kg.Buffers, k.Writes...)
	}
	kg.renumber()
	return kg, nil
}

// rowPasses is how many times a row kernel reads its row from memory: once if the row fits on
// chip, else once per chained reduction and once more for the epilogue (softmax: max, sum,
// normalize).
func rowPasses(k *Kernel, maxRow int) int {
	n := 1
	for _, a := range k.Axes {
		n *= k.Space[a]
	}
	if n <= maxRow {
		return 1
	}
	depth := map[*ir.Value]int{}
	deepest := 0
	for _, v := range k.Body.Values {
		d := 0
		for _, a := range v.Args {
			d = max(d, depth[a])
		}
		if ops.ClassOf(v.Op) == ops.Reduce {
			d++
		}
		depth[v] = d
		deepest = max(deepest, d)
	}
	return deepest + 1
}

// neededOutside reports whether a kernel other than gr's reads w. A kernel that applies w itself
// (a dupable value that fit there as a view) reads w's operands instead: writing w for it would
// be a store nothing loads.
func (f *fuser) neededOutside(w *ir.Value, gr *group) bool {
	if w.Op == ir.OpInput || w.Op == ir.OpParam {
		return false
	}
	reads := func(h *group) bool { return h != nil && h != gr && !h.has(w) }
	for _, u := range f.users[w] {
		if reads(f.home[u]) || slices.ContainsFunc(f.dups[u], reads) {
			return true
		}
	}
	return false
}

// topoGroups orders the groups so that every group follows those it reads from, taking the
// group whose first value comes earliest among the ready ones.
func (f *fuser) topoGroups() ([]*group, error) {
	// Kahn's algorithm, the ready group with the smallest first (then the earliest) next: the
	// order a scan of all groups for that one gives, in O(G log G) instead of O(G²) (the eager
	// kernel graph of a large model has thousands of groups).
	pos := make(map[*group]int, len(f.groups))
	for i, gr := range f.groups {
		pos[gr] = i
	}
	waiting := make([]int, len(f.groups)) // dependencies not yet ordered
	dependents := make([][]int, len(f.groups))
	for i, gr := range f.groups {
		deps := map[*group]bool{}
		for _, w := range f.groupValues(gr) {
			for _, a := range w.Args {
				if h := f.home[a]; h != nil && h != gr && !gr.has(a) && !deps[h] {
					deps[h] = true
					waiting[i]++
					if j, ok := pos[h]; ok {
						dependents[j] = append(dependents[j], i)
					}
				}
			}
		}
	}
	ready := &groupHeap{groups: f.groups}
	for i := range f.groups {
		if waiting[i] == 0 {
			heap.Push(ready, i)
		}
	}
	order := make([]*group, 0, len(f.groups))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		order = append(order, f.groups[i])
		for _, j := range dependents[i] {
			if waiting[j]--; waiting[j] == 0 {
				heap.Push(ready, j)
			}
		}
	}
	if len(order) < len(f.groups) {
		return nil, fmt.Errorf("fusion created a cycle among %d kernels", len(f.groups)-len(order))
	}
	return order, nil
}

// groupHeap holds indexes into groups, smallest first (then index) on top.
type groupHeap struct {
	groups []*group
	idx    []int
}

func (h *groupHeap) Len() int { return len(h.idx) }
func (h *groupHeap) Less(a, b int) bool {
	x, y := h.idx[a], h.idx[b]
	return h.groups[x].first < h.groups[y].first || h.groups[x].first == h.groups[y].first && x < y
}
func (h *groupHeap) Swap(a, b int) { h.idx[a], h.idx[b] = h.idx[b], h.idx[a] }
func (h *groupHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *groupHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}

// label names a kernel after what it computes: "matmul_bias_relu", "softmax", "layernorm".
func (f *fuser) label(gr *group, vals []*ir.Value) string {
	if gr.kind == Custom {
		return customLabel(vals)
	}
	if gr.kind == Attention {
		for _, v := range vals {
			if gr.members[v] && v.Op != ops.AttentionLSEOp {
				return v.Op // attention (with its attention_lse or not) or attention_grad
			}
		}
		return ops.AttentionLSEOp
	}
	if gr.kind == Update {
		return ops.UpdateSliceOp
	}
	count := map[string]int{}
	for _, w := range vals {
		if gr.members[w] {
			count[w.Op]++
		}
	}
	var parts []string
	pool := "" // a contraction's pooling ends its name
	addPart := func(p string) {
		if len(parts) < 4 && !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	switch gr.kind {
	case Contraction:
		c := gr.contraction
		if c.Op == "conv2d" {
			addPart("conv")
		} else {
			addPart("matmul")
		}
		gelu := count["erf"] > 0 // its scalings and products are part of the name "gelu"
		for _, w := range vals {
			if !gr.members[w] || w == c || f.index[w] < f.index[c] {
				continue
			}
			if w.Op == "max_pool2d" || w.Op == "avg_pool2d" {
				pool = opName(w.Op)
			} else if name := epilogueName(w); name != "" && !(gelu && (name == "scale" || name == "mul")) {
				addPart(name)
			}
		}
	case Row:
		switch {
		case count["reduce_max"] > 0 && count["exp"] > 0 && count["log"] > 0:
			addPart("logsoftmax")
		case count["reduce_max"] > 0 && count["exp"] > 0 && count["reduce_sum"] > 0:
			addPart("softmax")
		case count["reduce_sum"] >= 2 && count["rsqrt"] > 0:
			addPart("layernorm")
		default:
			for _, w := range vals {
				if ops.ClassOf(w.Op) == ops.Reduce {
					addPart(strings.TrimPrefix(w.Op, "reduce_"))
				}
			}
		}
	default:
		for _, w := range vals {
			if gr.members[w] && !isView(w.Op) && w.Op != "constant" && w.Op != ir.OpInput && w.Op != ir.OpParam {
				addPart(opName(w.Op))
			}
		}
		if len(parts) == 0 {
			addPart("copy")
		}
	}
	if len(parts) > 3 {
		parts = parts[:3]
	}
	if pool != "" {
		parts = append(parts, pool)
	}
	return strings.Join(parts, "_")
}

func opName(op string) string {
	switch op {
	case "max_pool2d":
		return "maxpool"
	case "avg_pool2d":
		return "avgpool"
	case "broadcast_in_dim":
		return "broadcast"
	}
	return op
}

// epilogueName names one epilogue op of a contraction.
func epilogueName(w *ir.Value) string {
	switch w.Op {
	case "add":
		for _, a := range w.Args {
			if a.Op == "broadcast_in_dim" {
				return "bias"
			}
			if _, ok := splatValue(a); ok {
				return "" // adding a literal is part of a larger pattern
			}
		}
		return "add"
	case "mul":
		for _, a := range w.Args {
			if _, ok := splatValue(a); ok {
				return "scale"
			}
		}
	case "erf":
		return "gelu"
	case "select":
		return "mask"
	}
	return opName(w.Op)
}
