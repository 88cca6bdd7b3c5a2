package passes

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPlaceBestFitKeepsPlacements: placing with the units kept sorted as they are placed gives
// every unit the offset that sorting the live units for each one gives, ties of equal offsets
// included, so plans stay byte-identical; and units sets with an empty unit take the sorting path.
func TestPlaceBestFitKeepsPlacements(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name      string
		n, steps  int
		sizes     []int64 // drawn from
		withEmpty bool
	}{
		{"one unit", 1, 1, []int64{256}, false},
		{"equal sizes, many ties", 40, 6, []int64{256}, false},
		{"mixed sizes", 60, 20, []int64{256, 512, 1024, 4096, 65536}, false},
		{"long schedule", 200, 120, []int64{256, 768, 2048, 1 << 20}, false},
		{"an empty unit", 30, 8, []int64{256, 512}, true},
	} {
		for trial := range 20 {
			units := make([]*unit, tc.n)
			for i := range units {
				from := r.IntN(tc.steps)
				size := tc.sizes[r.IntN(len(tc.sizes))]
				units[i] = &unit{size: size, bytes: size - int64(r.IntN(4)), from: from, to: from + r.IntN(tc.steps-from)}
			}
			if tc.withEmpty {
				units[r.IntN(tc.n)].size, units[r.IntN(tc.n)].bytes = 0, 0
			}
			for _, order := range [][]*unit{orderBySize(units), orderByLifetime(units), orderByBreadth(units, tc.steps), shuffled(r, units)} {
				wantArena := placeBestFitSorting(units, order)
				want := offsets(units)
				for _, u := range units {
					u.offset = -1
				}
				arena := placeBestFit(units, order)
				if got := offsets(units); arena != wantArena || !slices.Equal(got, want) {
					t.Fatalf("%s, trial %d: arena %d offsets %v, want arena %d offsets %v", tc.name, trial, arena, got, wantArena, want)
				}
			}
		}
	}
}

// TestPlaceBestFitEmptyTie: an empty unit z placed on top of b (both at 512) offers the empty
// unit u placed after them a gap of zero bytes at 512 only when the sort puts z before b; sort.Slice
// keeps the units' order there (z, then b), so u goes to 512, not to the free space at 0.
func TestPlaceBestFitEmptyTie(t *testing.T) {
	f := &unit{size: 256, bytes: 256, from: 0, to: 0}
	a := &unit{size: 256, bytes: 256, from: 0, to: 1}
	b := &unit{size: 256, bytes: 256, from: 0, to: 2}
	z := &unit{from: 1, to: 2}
	u := &unit{from: 2, to: 2}
	placeBestFit([]*unit{f, a, z, b, u}, []*unit{f, a, b, z, u})
	if got := []int64{f.offset, a.offset, b.offset, z.offset, u.offset}; !slices.Equal(got, []int64{0, 256, 512, 512, 512}) {
		t.Errorf("offsets f a b z u = %v, want [0 256 512 512 512]", got)
	}
}

func shuffled(r *rand.Rand, units []*unit) []*unit {
	s := slices.Clone(units)
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}
