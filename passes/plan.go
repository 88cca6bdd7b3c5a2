package passes

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// The memory plan's types are the artifact's: the runtime reads them from the launch plan.
type (
	Plan         = artifact.MemoryPlan
	PlacedBuffer = artifact.PlacedBuffer
	IOBuffer     = artifact.IOBuffer
)

// Alignment is the byte alignment of every buffer in the arena.
const Alignment = artifact.Alignment

func indentedJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // plain structs always marshal
	}
	return append(b, '\n')
}

func alignUp(n int64) int64 { return alignTo(n, Alignment) }

func alignTo(n, a int64) int64 { return (n + a - 1) / a * a }

// interval is the live range of a temp buffer over kernel positions.
type interval struct{ from, to int }

// liveness computes, for every temp buffer, the kernels from its writer to its last reader.
func liveness(kernels []*Kernel) map[*Buffer]interval {
	live := map[*Buffer]interval{}
	for i, k := range kernels {
		for _, b := range k.Writes {
			if b.Kind == TempBuffer {
				live[b] = interval{i, i}
			}
		}
		for _, b := range k.Reads {
			if iv, ok := live[b]; ok {
				iv.to = i
				live[b] = iv
			}
		}
	}
	for b := range live {
		if bindTimeWritten(b) {
			live[b] = interval{0, len(kernels) - 1}
		}
	}
	return live
}

// peakLive is the most temp bytes live at one kernel, each buffer counted by its exact size.
func peakLive(kernels []*Kernel) int64 {
	delta := make([]int64, len(kernels)+1)
	for b, iv := range liveness(kernels) {
		delta[iv.from] += b.Bytes()
		delta[iv.to+1] -= b.Bytes()
	}
	var cur, peak int64
	for _, d := range delta {
		cur += d
		peak = max(peak, cur)
	}
	return peak
}

// schedulePass reorders kernels (keeping every dependency) when a greedy order needs less peak
// memory than the fusion order. Fusion is unchanged: only the order moves.
func schedulePass(st *State) error {
	kg := st.Kernels
	order := greedyOrder(kg.Kernels)
	if peakLive(order) < peakLive(kg.Kernels) {
		kg.Kernels = order
		kg.renumber()
	}
	return nil
}

// greedyOrder is list scheduling: among the kernels whose inputs are ready, run the one that
// grows live memory least (bytes it writes minus temp bytes it frees), earliest on ties.
func greedyOrder(kernels []*Kernel) []*Kernel {
	readers := map[*Buffer]int{}
	for _, k := range kernels {
		for _, b := range k.Reads {
			readers[b]++
		}
	}
	written := map[*Buffer]bool{}
	done := make([]bool, len(kernels))
	var order []*Kernel
	for len(order) < len(kernels) {
		best, bestGain := -1, int64(0)
		for i, k := range kernels {
			if done[i] || !ready(k, written) {
				continue
			}
			var gain int64
			for _, b := range k.Writes {
				if b.Kind == TempBuffer {
					gain += b.Bytes()
				}
			}
			for _, b := range k.Reads {
				if b.Kind == TempBuffer && readers[b] == 1 {
					gain -= b.Bytes()
				}
			}
			if best < 0 || gain < bestGain {
				best, bestGain = i, gain
			}
		}
		k := kernels[best]
		done[best] = true
		order = append(order, k)
		for _, b := range k.Writes {
			written[b] = true
		}
		for _, b := range k.Reads {
			readers[b]--
		}
	}
	return order
}

func ready(k *Kernel, written map[*Buffer]bool) bool {
	for _, b := range k.Reads {
		if b.Writer != nil && !written[b] {
			return false
		}
	}
	return true
}

// unit is a set of temp buffers that share memory: a buffer and the outputs written in place
// over it.
type unit struct {
	bufs   []*Buffer
	size   int64 // aligned: where the next buffer above it may start
	bytes  int64 // exact: the largest of bufs (they have equal sizes)
	from   int
	to     int
	offset int64
	placed bool
}

// A span is a placed unit's bytes and live range, kept by value so that a scan over the placed
// units reads memory in order.
type span struct {
	offset, size int64
	from, to     int
}

func memplanPass(st *State) error {
	if err := checkInMemory(st.Graph, st.Kernels); err != nil {
		return err
	}
	st.Plan = planMemory(st.Kernels)
	return nil
}

// planMemory places the temp buffers: liveness over the schedule, in-place reuse for
// elementwise kernels, then the better of two placements.
func planMemory(kg *KernelGraph) *Plan {
	live := liveness(kg.Kernels)
	p := &Plan{Alignment: Alignment}
	unitOf := map[*Buffer]*unit{}
	inPlace := map[*Buffer]*Buffer{}
	var units []*unit
	for i, k := range kg.Kernels {
		taken := map[*Buffer]bool{}
		for _, out := range k.Writes {
			if out.Kind != TempBuffer {
				continue
			}
			if in := inPlaceCandidate(k, i, out, live, taken); in != nil {
				taken[in] = true
				inPlace[out] = in
				u := unitOf[in]
				u.bufs = append(u.bufs, out)
				u.to = max(u.to, live[out].to)
				u.bytes = max(u.bytes, out.Bytes())
				unitOf[out] = u
				continue
			}
			u := &unit{bufs: []*Buffer{out}, size: alignUp(out.Bytes()), bytes: out.Bytes(), from: live[out].from, to: live[out].to}
			units = append(units, u)
			unitOf[out] = u
		}
	}
	alias := donations(kg)
	updatesInPlace(kg, inPlace, alias)
	for _, u := range units {
		p.NaiveBytes += u.bufs[0].Bytes()
		for _, b := range u.bufs[1:] {
			p.NaiveBytes += b.Bytes()
		}
	}
	p.LowerBoundBytes = unitPeak(units, len(kg.Kernels))
	p.AlignedLowerBoundBytes = alignedBound(units, len(kg.Kernels))
	p.ArenaBytes = -1
	var best []int64
	var bestOrder []*unit
	for _, h := range []struct {
		name  string
		order []*unit
	}{
		{"greedy-by-size", orderBySize(units)},
		{"greedy-by-breadth", orderByBreadth(units, len(kg.Kernels))},
		{"longest-lived-first", orderByLifetime(units)},
	} {
		if arena := placeBestFit(units, h.order); p.ArenaBytes < 0 || arena < p.ArenaBytes {
			p.Heuristic, p.ArenaBytes, best, bestOrder = h.name, arena, offsets(units), h.order
		}
	}
	if arena, offs := improveOrder(units, bestOrder, p.ArenaBytes, p.AlignedLowerBoundBytes); arena < p.ArenaBytes {
		p.Heuristic += " + swaps"
		p.ArenaBytes, best = arena, offs
	}
	for i, u := range units {
		u.offset = best[i]
	}
	p.Buffers = []PlacedBuffer{} // "buffers": [] in JSON when there are no temps, not null
	for _, b := range kg.Buffers {
		switch b.Kind {
		case TempBuffer:
			pb := PlacedBuffer{Name: b.Name, Offset: unitOf[b].offset, Size: b.Bytes(), LiveFrom: live[b].from, LiveTo: live[b].to}
			if in := inPlace[b]; in != nil {
				pb.InPlaceOf = in.Name
			}
			p.Buffers = append(p.Buffers, pb)
		case InputBuffer:
			p.Inputs = append(p.Inputs, IOBuffer{Name: b.Name, Type: b.Type.String(), Size: b.Bytes()})
		case ParamBuffer:
			p.Params = append(p.Params, IOBuffer{Name: b.Name, Type: b.Type.String(), Size: b.Bytes()})
		}
	}
	for _, b := range kg.Outputs {
		o := IOBuffer{Name: b.Name, Type: b.Type.String(), Size: b.Bytes()}
		if in := alias[b]; in != nil {
			o.InPlaceOf = in.Name
		}
		p.Outputs = append(p.Outputs, o)
	}
	sort.SliceStable(p.Buffers, func(i, j int) bool { return p.Buffers[i].LiveFrom < p.Buffers[j].LiveFrom })
	return p
}

// unitPeak is the most bytes live at one kernel: exact sizes, a unit's in-place buffers sharing
// its bytes.
func unitPeak(units []*unit, n int) int64 {
	delta := make([]int64, n+1)
	for _, u := range units {
		delta[u.from] += u.bytes
		delta[u.to+1] -= u.bytes
	}
	var cur, peak int64
	for _, d := range delta {
		cur += d
		peak = max(peak, cur)
	}
	return peak
}

// alignedBound is the lower bound on the arena that respects alignment: at each kernel, the
// smallest arena that holds the units live there, every one at a multiple of Alignment. Sorted
// by offset, each unit but the top one ends before the next aligned offset, so it takes its
// aligned size; the top one takes its exact size. The best order puts the unit with the most
// padding on top: sum of aligned sizes minus the largest padding. The maximum over kernels
// bounds every aligned placement of the whole schedule from below.
func alignedBound(units []*unit, n int) int64 {
	sum := make([]int64, n)
	pad := make([]int64, n)
	for _, u := range units {
		for s := u.from; s <= u.to; s++ {
			sum[s] += u.size
			pad[s] = max(pad[s], u.size-u.bytes)
		}
	}
	var bound int64
	for s := range sum {
		bound = max(bound, sum[s]-pad[s])
	}
	return bound
}

// inPlaceCandidate returns a temp buffer that out may overwrite: k is a loop kernel that reads
// it only elementwise at the output's own index, or an update kernel's operand, this is its last
// use, and the sizes match.
func inPlaceCandidate(k *Kernel, i int, out *Buffer, live map[*Buffer]interval, taken map[*Buffer]bool) *Buffer {
	if in := updateOperand(k); in != nil {
		if in.Kind == TempBuffer && !taken[in] && !bindTimeWritten(in) && live[in].to == i && in.Type.Equal(out.Type) {
			return in
		}
		return nil
	}
	if k.Kind != Loop {
		return nil
	}
	for _, in := range k.Reads {
		if in.Kind == TempBuffer && !taken[in] && !bindTimeWritten(in) && live[in].to == i && in.Bytes() == out.Bytes() && in.Type.Shape.Equal(k.Space) &&
			elementwiseUse(k, in.Name) {
			return in
		}
	}
	return nil
}

// elementwiseUse reports whether everything k computes from its input name is elementwise over
// the kernel's space: then each thread reads the input only at the index it writes.
func elementwiseUse(k *Kernel, name string) bool {
	var start *ir.Value
	for _, v := range k.Body.Inputs() {
		if v.Name == name {
			start = v
		}
	}
	if start == nil {
		return false
	}
	reached := map[*ir.Value]bool{start: true}
	for _, v := range k.Body.Values {
		if slices.ContainsFunc(v.Args, func(a *ir.Value) bool { return reached[a] }) {
			if ops.ClassOf(v.Op) != ops.Elementwise || !v.Type.Shape.Equal(k.Space) {
				return false
			}
			reached[v] = true
		}
	}
	return true
}

// improveOrder searches around the best placement order: it swaps two units (chosen by a
// fixed-seed generator, so plans are reproducible), places again, and keeps swaps that do not
// grow the arena. It stops at the lower bound or after a budget of placement work.
func improveOrder(units, order []*unit, arena, bound int64) (int64, []int64) {
	n := len(order)
	if n < 2 || arena <= bound {
		return arena, nil
	}
	order = slices.Clone(order)
	best := arena
	var bestOffs []int64
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 400 && iter*n*n < 20_000_000 && best > bound; iter++ {
		i, j := r.IntN(n), r.IntN(n)
		order[i], order[j] = order[j], order[i]
		if a := placeBestFit(units, order); a <= best {
			if a < best {
				bestOffs = offsets(units)
			}
			best = a
		} else {
			order[i], order[j] = order[j], order[i]
		}
	}
	return best, bestOffs
}

func offsets(units []*unit) []int64 {
	o := make([]int64, len(units))
	for i, u := range units {
		o[i] = u.offset
	}
	return o
}

// orderBySize is TFLite's greedy-by-size order: largest first, then longest-lived.
func orderBySize(units []*unit) []*unit {
	order := slices.Clone(units)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.size != b.size {
			return a.size > b.size
		}
		return a.to-a.from > b.to-b.from
	})
	return order
}

// orderByLifetime is XLA's heuristic: the longest-lived buffers first, then the largest.
func orderByLifetime(units []*unit) []*unit {
	order := slices.Clone(units)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.to-a.from != b.to-b.from {
			return a.to-a.from > b.to-b.from
		}
		return a.size > b.size
	})
	return order
}

// orderByBreadth is greedy by breadth (Pisarchyk & Lee 2020): the kernels with the most bytes
// live first, and within each its buffers largest first.
func orderByBreadth(units []*unit, n int) []*unit {
	total := make([]int64, n)
	for _, u := range units {
		for s := u.from; s <= u.to; s++ {
			total[s] += u.size
		}
	}
	steps := make([]int, n)
	for i := range steps {
		steps[i] = i
	}
	sort.SliceStable(steps, func(i, j int) bool { return total[steps[i]] > total[steps[j]] })
	var order []*unit
	seen := map[*unit]bool{}
	for _, s := range steps {
		var here []*unit
		for _, u := range units {
			if !seen[u] && u.from <= s && s <= u.to {
				here = append(here, u)
				seen[u] = true
			}
		}
		order = append(order, orderBySize(here)...)
	}
	return order
}

// placeBestFit places units in the given order, each in the smallest gap between the units
// already placed that are live at the same time, and returns the arena size: the end of the
// highest buffer (the arena itself needs no padding after its last byte).
//
// improveOrder calls it hundreds of times per plan, so the units placed so far are kept sorted
// by offset as they are placed, as spans, instead of collected and sorted again for each unit.
// Units at equal offsets may then come in another order than a sort would give them; that
// changes nothing unless one of them is empty (a later one of the tie then offers a gap of zero
// bytes at the tie's offset, which only an empty unit takes), so plans with empty units are
// placed as before.
func placeBestFit(units []*unit, order []*unit) int64 {
	for _, u := range units {
		u.placed = false
		if u.size == 0 {
			return placeBestFitSorting(units, order)
		}
	}
	byOffset := make([]span, 0, len(order))
	var arena int64
	for _, u := range order {
		u.offset, u.placed = bestGap(u, byOffset), true
		i, _ := slices.BinarySearchFunc(byOffset, u.offset+1, func(s span, off int64) int { return cmp.Compare(s.offset, off) })
		byOffset = slices.Insert(byOffset, i, span{u.offset, u.size, u.from, u.to})
		arena = max(arena, u.offset+u.bytes)
	}
	return arena
}

// placeBestFitSorting is placeBestFit with the units live beside each one sorted by offset as
// sort.Slice orders them, ties included: the placement of plans with empty units.
func placeBestFitSorting(units []*unit, order []*unit) int64 {
	for _, u := range units {
		u.placed = false
	}
	var arena int64
	for _, u := range order {
		var busy []*unit
		for _, o := range units {
			if o.placed && o.from <= u.to && u.from <= o.to {
				busy = append(busy, o)
			}
		}
		sort.Slice(busy, func(i, j int) bool { return busy[i].offset < busy[j].offset })
		spans := make([]span, len(busy))
		for i, o := range busy {
			spans[i] = span{o.offset, o.size, o.from, o.to}
		}
		u.offset, u.placed = bestGap(u, spans), true
		arena = max(arena, u.offset+u.bytes)
	}
	return arena
}

// bestGap returns the offset of the smallest gap that holds u between the spans of byOffset
// (sorted by offset) live at the same time as u, or the end of the highest of them.
func bestGap(u *unit, byOffset []span) int64 {
	best, bestGap := int64(-1), int64(-1)
	var end int64
	for _, o := range byOffset {
		if o.from > u.to || u.from > o.to {
			continue
		}
		if gap := o.offset - end; gap >= u.size && (bestGap < 0 || gap < bestGap) {
			best, bestGap = end, gap
		}
		end = max(end, o.offset+o.size)
	}
	if best < 0 {
		return end
	}
	return best
}

// CheckPlan independently checks a memory plan against its kernel graph: every temp buffer is
// placed once, aligned, inside the arena, with the live range its writer and readers give; and
// no two buffers live at the same kernel overlap in memory, except an elementwise kernel's
// output written in place over an input whose last use that kernel is.
func CheckPlan(kg *KernelGraph, p *Plan) error {
	if p == nil {
		return fmt.Errorf("no memory plan")
	}
	pos := map[*Kernel]int{}
	for i, k := range kg.Kernels {
		pos[k] = i
	}
	placed := map[string]PlacedBuffer{}
	for _, b := range p.Buffers {
		if _, dup := placed[b.Name]; dup {
			return fmt.Errorf("buffer %s placed twice", b.Name)
		}
		placed[b.Name] = b
	}
	for _, b := range kg.Buffers {
		if b.Kind != TempBuffer {
			if _, ok := placed[b.Name]; ok {
				return fmt.Errorf("%s buffer %s is in the arena", b.Kind, b.Name)
			}
			continue
		}
		pb, ok := placed[b.Name]
		if !ok {
			return fmt.Errorf("temp buffer %s is not placed", b.Name)
		}
		from, to := pos[b.Writer], pos[b.Writer]
		for i, k := range kg.Kernels {
			if slices.Contains(k.Reads, b) {
				to = max(to, i)
			}
		}
		if bindTimeWritten(b) {
			from, to = 0, len(kg.Kernels)-1
		}
		switch {
		case pb.Size != b.Bytes():
			return fmt.Errorf("buffer %s: size %d, want %d", b.Name, pb.Size, b.Bytes())
		case pb.LiveFrom != from || pb.LiveTo != to:
			return fmt.Errorf("buffer %s: live k%d..k%d, but written at k%d and last read at k%d", b.Name, pb.LiveFrom, pb.LiveTo, from, to)
		case pb.Offset%Alignment != 0 || pb.Offset < 0:
			return fmt.Errorf("buffer %s: offset %d is not %d-byte aligned", b.Name, pb.Offset, Alignment)
		case pb.Offset+pb.Size > p.ArenaBytes:
			return fmt.Errorf("buffer %s: [%d, %d) lies outside the %d-byte arena", b.Name, pb.Offset, pb.Offset+pb.Size, p.ArenaBytes)
		}
	}
	if len(placed) != len(p.Buffers) || countTemps(kg) != len(p.Buffers) {
		return fmt.Errorf("plan places %d buffers, the kernel graph has %d temps", len(p.Buffers), countTemps(kg))
	}
	for i, a := range p.Buffers {
		for _, b := range p.Buffers[i+1:] {
			timeOverlap := a.LiveFrom <= b.LiveTo && b.LiveFrom <= a.LiveTo
			memOverlap := a.Offset < b.Offset+b.Size && b.Offset < a.Offset+a.Size
			if !timeOverlap || !memOverlap || legalInPlace(kg, a, b) || legalInPlace(kg, b, a) {
				continue
			}
			return fmt.Errorf("buffers %s [%d, %d) live k%d..k%d and %s [%d, %d) live k%d..k%d overlap",
				a.Name, a.Offset, a.Offset+a.Size, a.LiveFrom, a.LiveTo, b.Name, b.Offset, b.Offset+b.Size, b.LiveFrom, b.LiveTo)
		}
	}
	return nil
}

func countTemps(kg *KernelGraph) int {
	n := 0
	for _, b := range kg.Buffers {
		if b.Kind == TempBuffer {
			n++
		}
	}
	return n
}

// legalInPlace reports whether out may share in's memory: they meet at one kernel only, the
// kernel that reads in for the last time and writes out, at the same offset, reading in
// elementwise.
func legalInPlace(kg *KernelGraph, in, out PlacedBuffer) bool {
	if out.InPlaceOf != in.Name || in.LiveTo != out.LiveFrom || in.Offset != out.Offset || in.Size != out.Size {
		return false
	}
	k := kg.Kernels[out.LiveFrom]
	if op := updateOperand(k); op != nil {
		return op.Name == in.Name // an update writes its rows over its operand, the rest stays
	}
	return k.Kind == Loop && elementwiseUse(k, in.Name)
}
