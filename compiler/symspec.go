package compiler

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
)

// Specializations (docs/dynamic.md, "Specializations"). A program with dims is built at its
// bounds, where the passes choose its fusion and persistent kernels; a run at much smaller
// sizes keeps those choices. A variant is the whole program compiled again with some dims'
// upper bounds lowered: its own passes, fusion, memory plan and kernels. The plan carries each
// variant's kernels beside the bound's with the ranges each runs, and the runtime picks per run
// the one whose ranges hold the run's sizes. Inputs, parameters and outputs are the bound's,
// and one arena, the largest any variant needs, serves them all. Kernels that are the same up
// to names in several variants share one entry of the module, as a static program's do.

// autoGain is how much faster (modeled, on a stream) a half-bound variant must be at half the
// bound than the bound's build for SpecializeAuto to keep it.
const autoGain = 0.95

// compileVariants compiles g with the splits of opt.Specialize (or those SpecializeAuto finds).
func compileVariants(g *ir.Graph, opt Options) (*Result, error) {
	if len(g.Dims) == 0 {
		return nil, fmt.Errorf("specialize: graph %s has no dims to specialize", g.Name)
	}
	splits, err := checkSplits(g, opt.Specialize)
	if err == nil {
		err = checkVariantCount(g, splits, "")
	}
	if err != nil {
		return nil, err
	}
	bound, err := lower(g, opt)
	if err != nil {
		return nil, err
	}
	cache := map[string]*lowered{}
	notes := map[string]string{} // by dim: why the automatic choice split it
	if opt.SpecializeAuto {
		if err := autoSplits(g, opt, bound, splits, cache, notes); err != nil {
			return nil, err
		}
		if err := checkVariantCount(g, splits, " with auto's splits"); err != nil {
			return nil, err
		}
	}
	boxes := variantBoxes(g, splits)
	if len(boxes) == 1 { // nothing to specialize: the plain build
		return compileLowered(opt, bound)
	}
	own := boxes[len(boxes)-1]
	var variants []*lowered
	kernels, customs := slices.Clone(bound.kernels), slices.Clone(bound.customs)
	for i, box := range boxes[:len(boxes)-1] {
		l, err := lowerAt(g, opt, box, cache)
		if err != nil {
			return nil, err
		}
		if err := sameBuffers(bound, l); err != nil {
			return nil, fmt.Errorf("specialize %s: %v", artifact.RangesString(box), err)
		}
		for _, k := range l.kernels {
			k.Name = fmt.Sprintf("v%d_%s", i+1, k.Name) // one module: entry names are unique
			kernels = append(kernels, k)
		}
		customs = append(customs, l.customs...)
		variants = append(variants, l)
	}
	text, launches, entries, err := module(opt, kernels, customs)
	if err != nil {
		return nil, err
	}
	n, c := len(bound.kernels), len(bound.customs)
	plan, err := bound.plan(opt, launches[:n], entries[:c])
	if err != nil {
		return nil, err
	}
	launches, entries = launches[n:], entries[c:]
	for i, l := range variants {
		n, c := len(l.kernels), len(l.customs)
		vp, err := l.plan(opt, launches[:n], entries[:c])
		if err != nil {
			return nil, fmt.Errorf("specialize %s: %v", artifact.RangesString(boxes[i]), err)
		}
		launches, entries = launches[n:], entries[c:]
		plan.Variants = append(plan.Variants, artifact.Variant{Ranges: boxes[i], Note: boxNote(boxes[i], splits, notes),
			ArenaBytes: vp.ArenaBytes, Buffers: vp.Buffers, ScratchBytes: vp.ScratchBytes, ErrorBytes: vp.ErrorBytes, Kernels: vp.Kernels})
	}
	plan.Version, plan.OwnRanges = artifact.VariantsVersion, own
	if err := plan.Validate(); err != nil {
		return nil, fmt.Errorf("internal error: the launch plan is inconsistent: %v", err)
	}
	res := &Result{Artifact: &artifact.Artifact{PTX: []byte(text), Plan: plan}, Passes: bound.res}
	for i, l := range variants {
		res.Variants = append(res.Variants, Variant{Ranges: boxes[i], Graph: l.g, Passes: l.res})
	}
	return res, nil
}

// Variant is one specialization of a compiled program: the ranges it runs, its graph (the
// source with those upper bounds) and what the passes computed for it.
type Variant struct {
	Ranges []artifact.Dim
	Graph  *ir.Graph
	Passes *passes.Result
}

// boxNote joins the automatic choice's notes of the dims whose split ends the box's range.
func boxNote(box []artifact.Dim, splits map[string][]int, notes map[string]string) string {
	var ns []string
	for _, r := range box {
		if n := notes[r.Name]; n != "" && slices.Contains(splits[r.Name], r.Hi) {
			ns = append(ns, n)
		}
	}
	return strings.Join(ns, "; ")
}

// compileLowered is Compile's module and plan for a lowered graph.
func compileLowered(opt Options, l *lowered) (*Result, error) {
	text, launches, entries, err := module(opt, l.kernels, l.customs)
	if err != nil {
		return nil, err
	}
	plan, err := l.plan(opt, launches, entries)
	if err != nil {
		return nil, err
	}
	return &Result{Artifact: &artifact.Artifact{PTX: []byte(text), Plan: plan}, Passes: l.res}, nil
}

// checkSplits checks the requested upper bounds against g's dims (each within the dim's range
// and below its bound, so both sides of the split hold sizes) and returns them sorted, without
// repeats.
func checkSplits(g *ir.Graph, req map[string][]int) (map[string][]int, error) {
	splits := map[string][]int{}
	names := make([]string, 0, len(req))
	for name := range req {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		i := slices.IndexFunc(g.Dims, func(d ir.Dim) bool { return d.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("specialize %s: graph %s has no dim %q (its dims: %s)", name, g.Name, name, DimNames(g))
		}
		d := g.Dims[i]
		for _, b := range req[name] {
			if b < d.Lo || b >= d.Hi {
				return nil, fmt.Errorf("specialize %s=%d: the bound must lie in %s's range [%d,%d] and below its upper end %d", name, b, name, d.Lo, d.Hi, d.Hi)
			}
			if b < 1 {
				return nil, fmt.Errorf("specialize %s=%d: the bound must be at least 1 (a variant for sizes up to 0 has nothing to compile)", name, b)
			}
			if !slices.Contains(splits[name], b) {
				splits[name] = append(splits[name], b)
			}
		}
		slices.Sort(splits[name])
	}
	return splits, nil
}

// DimNames lists g's dims: "batch, seq".
func DimNames(g *ir.Graph) string {
	var names []string
	for _, d := range g.Dims {
		names = append(names, d.Name)
	}
	return strings.Join(names, ", ")
}

// variantBoxes cuts the dims' ranges at the splits and returns every combination of pieces, in
// the dims' order with the first dim's pieces varying slowest; the last is the bounds' own.
func variantBoxes(g *ir.Graph, splits map[string][]int) [][]artifact.Dim {
	boxes := [][]artifact.Dim{nil}
	for _, d := range g.Dims {
		var pieces []artifact.Dim
		lo := d.Lo
		for _, b := range splits[d.Name] {
			pieces = append(pieces, artifact.Dim{Name: d.Name, Lo: lo, Hi: b})
			lo = b + 1
		}
		pieces = append(pieces, artifact.Dim{Name: d.Name, Lo: lo, Hi: d.Hi})
		var next [][]artifact.Dim
		for _, box := range boxes {
			for _, p := range pieces {
				next = append(next, append(slices.Clone(box), p))
			}
		}
		boxes = next
	}
	return boxes
}

// lowerAt lowers g with each dim's upper bound the box's (its lower bound kept: the variant's
// kernels run any size up to their bound), reusing cache.
func lowerAt(g *ir.Graph, opt Options, box []artifact.Dim, cache map[string]*lowered) (*lowered, error) {
	key := artifact.RangesString(box)
	if l := cache[key]; l != nil {
		return l, nil
	}
	his := map[string]int{}
	for _, r := range box {
		his[r.Name] = r.Hi
	}
	rg, err := rebound(g, his)
	if err != nil {
		return nil, fmt.Errorf("specialize %s: %v", key, err)
	}
	l, err := lower(rg, opt)
	if err != nil {
		return nil, fmt.Errorf("specialize %s: %v", key, err)
	}
	cache[key] = l
	return l, nil
}

// rebound returns g with the upper bounds of the dims in his lowered to those values: every
// type's bounds, and the attributes that hold a bound (reshape's and broadcast_in_dim's shape,
// the limit of a symbolic dim sliced whole), recomputed from the expressions, then verified.
func rebound(g *ir.Graph, his map[string]int) (*ir.Graph, error) {
	c := g.Clone()
	for i, d := range c.Dims {
		if hi, ok := his[d.Name]; ok {
			c.Dims[i].Hi = hi
		}
	}
	r := c.Ranges()
	orig := make(map[*ir.Value]*ir.Value, len(g.Values))
	for i, v := range c.Values {
		orig[v] = g.Values[i]
	}
	for _, v := range c.Values {
		if v.Type.Sym == nil {
			continue
		}
		shape := slices.Clone(v.Type.Shape)
		for i, e := range v.Type.Sym {
			_, hi, err := e.Range(r)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", g.FormatAt(orig[v]), err)
			}
			shape[i] = int(hi)
		}
		v.Type.Shape = shape
	}
	for _, v := range c.Values {
		switch v.Op {
		case "reshape", "broadcast_in_dim":
			if v.Type.Sym != nil {
				v.Attrs["shape"] = []int(slices.Clone(v.Type.Shape))
			}
		case "slice":
			x := v.Args[0].Type
			if x.Sym == nil {
				break
			}
			limit := slices.Clone(v.Attrs.Ints("limit"))
			for i := range limit {
				if _, ok := x.Sym[i].IsConst(); !ok {
					limit[i] = x.Shape[i]
				}
			}
			v.Attrs["limit"] = limit
		}
	}
	if err := ops.Verify(c); err != nil {
		return nil, fmt.Errorf("the graph at the lowered bounds: %w", err)
	}
	return c, nil
}

// sameBuffers checks that a variant names the bound build's inputs, parameters and outputs
// alike: its kernels bind the bound's buffers by name.
func sameBuffers(bound, v *lowered) error {
	a, b := bound.res.Plan, v.res.Plan
	for _, set := range []struct {
		kind string
		x, y []artifact.IOBuffer
	}{{"inputs", a.Inputs, b.Inputs}, {"parameters", a.Params, b.Params}, {"outputs", a.Outputs, b.Outputs}} {
		if !slices.EqualFunc(set.x, set.y, func(p, q artifact.IOBuffer) bool { return p.Name == q.Name && p.InPlaceOf == q.InPlaceOf }) {
			return fmt.Errorf("the variant's %s differ from the bound's", set.kind)
		}
	}
	return nil
}

// autoSplits adds to splits, for each dim in turn, a split at half its bound when the variant
// built there is modeled at least 1/autoGain faster at that size, launched on a stream, than the
// bound's build (with its persistent kernels) at the same size; notes records why, by dim.
func autoSplits(g *ir.Graph, opt Options, bound *lowered, splits map[string][]int, cache map[string]*lowered, notes map[string]string) error {
	for _, d := range g.Dims {
		half := d.Hi / 2
		if half < d.Lo || half >= d.Hi || len(splits[d.Name]) > 0 {
			continue
		}
		env := map[string]int64{}
		var box []artifact.Dim
		for _, e := range g.Dims {
			env[e.Name] = int64(e.Hi)
			box = append(box, artifact.Dim{Name: e.Name, Lo: e.Lo, Hi: e.Hi})
		}
		env[d.Name] = int64(half)
		i := slices.IndexFunc(box, func(r artifact.Dim) bool { return r.Name == d.Name })
		box[i].Hi = half
		po := opt.Passes
		po.AMP = ir.Invalid // bound.g is autocast already
		at, err := StatsAt(bound.g, env, po, bound.res.Kernels)
		if err != nil {
			return err
		}
		v, err := lowerAt(g, opt, box, cache)
		if err != nil {
			return err
		}
		own, mine := at.ModeledTimeUS, v.res.Stats.ModeledTimeUS
		if mine > autoGain*own {
			continue
		}
		splits[d.Name] = []int{half}
		notes[d.Name] = fmt.Sprintf("auto: modeled %.3f µs on a stream at %s=%d, the bound's build %.3f µs", mine, d.Name, half, own)
	}
	return nil
}

// StatsAt runs the passes over g instantiated at env and returns their cost report: persistent
// kernels and launches (on a stream, and as a CUDA graph) counted as for a static build. The
// persistent kernels are those the build formed at the bound (bound, its kernel graph): left to
// itself at smaller sizes, the pass may group more kernels than the build runs.
func StatsAt(g *ir.Graph, env map[string]int64, opt passes.Options, bound *passes.KernelGraph) (*passes.Stats, error) {
	inst, err := ops.Instantiate(g, env)
	if err != nil {
		return nil, err
	}
	opt.DumpAfter, opt.DumpTo, opt.Timings = "", nil, nil
	runs := slices.Clone(bound.PersistRuns)
	opt.Fusion.PersistRuns = &runs
	res, err := passes.Run(inst, opt)
	if err != nil {
		return nil, fmt.Errorf("at %s: %v", SizesString(g, env), err)
	}
	return res.Stats, nil
}

// SizesString is env in the graph's dim order: "batch=20, seq=2048".
func SizesString(g *ir.Graph, env map[string]int64) string {
	var parts []string
	for _, d := range g.Dims {
		parts = append(parts, fmt.Sprintf("%s=%d", d.Name, env[d.Name]))
	}
	return strings.Join(parts, ", ")
}
