package passes

import (
	"math/rand/v2"
	"testing"

	"github.com/gcomp/gcomp/ir"
)

// TestGroupDepsReaches compares groupDeps.reaches and upstream with a plain search over the
// groups' edges on random groupings of random graphs: groupings that keep the groups acyclic
// (the fuser's, whose topological positions prune the search) and arbitrary ones, with cycles
// (searched whole).
func TestGroupDepsReaches(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name          string
		values, group int // values in the graph; at most this many consecutive values per group
		anyPartition  bool
	}{
		{"one group", 5, 5, false},
		{"singletons", 20, 1, false},
		{"consecutive runs", 40, 4, false},
		{"arbitrary partition", 60, 0, true},
		{"no values", 0, 1, false},
	} {
		for trial := range 20 {
			vals := make([]*ir.Value, tc.values)
			for i := range vals {
				v := &ir.Value{ID: i}
				for range r.IntN(3) {
					if i > 0 {
						v.Args = append(v.Args, vals[r.IntN(i)])
					}
				}
				vals[i] = v
			}
			f := &fuser{home: map[*ir.Value]*group{}}
			newGroup := func() *group {
				gr := &group{members: map[*ir.Value]bool{}, views: map[*ir.Value]bool{}}
				f.groups = append(f.groups, gr)
				return gr
			}
			if tc.anyPartition {
				for range 8 {
					newGroup()
				}
				for _, v := range vals {
					gr := f.groups[r.IntN(len(f.groups))]
					gr.members[v], f.home[v] = true, gr
				}
			} else {
				// Runs of consecutive values: every edge leads forward, no cycle.
				for i := 0; i < len(vals); {
					gr := newGroup()
					for n := 1 + r.IntN(tc.group); n > 0 && i < len(vals); n, i = n-1, i+1 {
						gr.members[vals[i]], f.home[vals[i]] = true, gr
					}
				}
				r.Shuffle(len(f.groups), func(i, j int) { f.groups[i], f.groups[j] = f.groups[j], f.groups[i] })
			}
			d := f.groupDeps()
			if !tc.anyPartition && d.pos == nil {
				t.Fatalf("%s: an acyclic grouping got no topological order", tc.name)
			}
			for _, b := range f.groups {
				up := f.upstream(b)
				for _, a := range f.groups {
					want := plainReaches(f, a, b)
					if got := d.reaches(a, b); got != want {
						t.Fatalf("%s, trial %d: reaches = %v, want %v", tc.name, trial, got, want)
					}
					if a != b && up[a] != want {
						t.Fatalf("%s, trial %d: upstream has it: %v, want %v", tc.name, trial, up[a], want)
					}
				}
			}
		}
	}
}

// plainReaches searches the edges from scratch, as the fuser did before groupDeps.
func plainReaches(f *fuser, from, to *group) bool {
	reads := func(h, gr *group) bool {
		for w := range gr.members {
			for _, a := range w.Args {
				if f.home[a] == h && h != gr {
					return true
				}
			}
		}
		return false
	}
	seen := map[*group]bool{from: true}
	stack := []*group{from}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, n := range f.groups {
			if !reads(h, n) {
				continue
			}
			if n == to {
				return true
			}
			if !seen[n] {
				seen[n] = true
				stack = append(stack, n)
			}
		}
	}
	return false
}
