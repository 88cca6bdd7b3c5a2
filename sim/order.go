package sim

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// BlockOrder is the order in which a launch's blocks start. A correct
// kernel gives the same bytes in every order (atomic float sums aside); one
// that depends on blocks running in index order, as they tend to on a GPU
// but are not promised to, shows up under Reverse or Random.
type BlockOrder uint8

const (
	InOrder     BlockOrder = iota // by linear block index
	Reverse                       // highest index first
	RandomOrder                   // a permutation drawn from Config.Seed
)

func (o BlockOrder) String() string {
	switch o {
	case InOrder:
		return "in-order"
	case Reverse:
		return "reverse"
	case RandomOrder:
		return "random"
	}
	return fmt.Sprintf("BlockOrder(%d)", uint8(o))
}

// ParseBlockOrder reads a BlockOrder by its String name.
func ParseBlockOrder(s string) (BlockOrder, error) {
	for _, o := range []BlockOrder{InOrder, Reverse, RandomOrder} {
		if o.String() == s {
			return o, nil
		}
	}
	return 0, fmt.Errorf("unknown block order %q (want in-order, reverse or random)", s)
}

// perm returns the i-th block to run among n. The random order is a
// bijection computed per index (a few rounds of odd multiplies and
// xor-shifts on the next power of two, cycle-walked into [0, n)), so a
// grid of any size needs no table.
func (o BlockOrder) perm(n int, seed uint64) func(int) int {
	switch o {
	case Reverse:
		return func(i int) int { return n - 1 - i }
	case RandomOrder:
		k := uint(max(bits.Len64(uint64(n-1)), 1))
		mask := uint64(1)<<k - 1
		r := rand.New(rand.NewPCG(seed, uint64(n)))
		var mul, add [4]uint64
		for j := range mul {
			mul[j], add[j] = r.Uint64()|1, r.Uint64()
		}
		return func(i int) int {
			x := uint64(i)
			for {
				for j := range mul {
					x = (x*mul[j] + add[j]) & mask
					x ^= x >> (k/2 + 1)
				}
				if x < uint64(n) {
					return int(x)
				}
			}
		}
	}
	return func(i int) int { return i }
}
