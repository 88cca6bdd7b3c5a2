package passes

import "github.com/gcomp/gcomp/ir"

// groupDeps is the dependence graph of one grouping: an edge from each group to every group that
// reads a value it computes. The fuser asks it whether joining two groups would close a cycle;
// building it walks every member of every group, so a caller asking many questions of one
// grouping builds it once.
//
// Groups are numbered in f.groups order and numbered again in a topological order of the edges:
// a path can only lead to a later position, so a question whose answer is a path searches only
// the positions between its two ends, and one from a later group to an earlier is answered
// without a search. (A grouping with a cycle, which the fuser never forms, is searched whole.)
type groupDeps struct {
	id    map[*group]int
	succ  [][]int
	pos   []int // topological position of each group; nil when the edges have a cycle
	seen  []int // the question that last visited each group
	asked int
	stack []int
}

func (f *fuser) groupDeps() *groupDeps {
	n := len(f.groups)
	d := &groupDeps{id: make(map[*group]int, n), succ: make([][]int, n), seen: make([]int, n)}
	for i, gr := range f.groups {
		d.id[gr] = i
	}
	indeg := make([]int, n)
	edge := func(w *ir.Value, into int) {
		for _, a := range w.Args {
			if h := f.home[a]; h != nil {
				if from, ok := d.id[h]; ok && from != into {
					d.succ[from] = append(d.succ[from], into)
					indeg[into]++
				}
			}
		}
	}
	for i, gr := range f.groups {
		for w := range gr.members {
			edge(w, i)
		}
		for w := range gr.views {
			edge(w, i)
		}
	}
	// Kahn's algorithm; the order among ready groups does not matter.
	pos := make([]int, n)
	ready := make([]int, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	for k := 0; k < len(ready); k++ {
		g := ready[k]
		pos[g] = k
		for _, s := range d.succ[g] {
			if indeg[s]--; indeg[s] == 0 {
				ready = append(ready, s)
			}
		}
	}
	if len(ready) == n {
		d.pos = pos
	}
	return d
}

// reaches reports whether group to depends on group from: a path of edges leads from from to to.
func (d *groupDeps) reaches(from, to *group) bool {
	s, ok := d.id[from]
	t, ok2 := d.id[to]
	if !ok || !ok2 {
		return false
	}
	if d.pos != nil && d.pos[s] >= d.pos[t] {
		return false
	}
	d.asked++
	d.seen[s] = d.asked
	d.stack = append(d.stack[:0], s)
	for len(d.stack) > 0 {
		h := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		for _, n := range d.succ[h] {
			if n == t {
				return true
			}
			if d.seen[n] != d.asked && (d.pos == nil || d.pos[n] < d.pos[t]) {
				d.seen[n] = d.asked
				d.stack = append(d.stack, n)
			}
		}
	}
	return false
}

// upstream returns the groups gr depends on: those with a path of edges to gr, found by
// searching back from gr through the groups computing what it reads. While values are assigned
// (last first), the groups formed so far lie mostly downstream of gr, so this search is short
// where building groupDeps would walk every group.
func (f *fuser) upstream(gr *group) map[*group]bool {
	up := map[*group]bool{}
	stack := []*group{gr}
	visit := func(w *ir.Value, into *group) {
		for _, a := range w.Args {
			if h := f.home[a]; h != nil && h != into && !up[h] {
				up[h] = true
				stack = append(stack, h)
			}
		}
	}
	for len(stack) > 0 {
		g := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for w := range g.members {
			visit(w, g)
		}
		for w := range g.views {
			visit(w, g)
		}
	}
	return up
}
