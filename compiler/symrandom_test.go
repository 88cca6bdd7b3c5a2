package compiler_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/internal/randgraph"
)

// Random graphs with symbolic dims (randgraph.Symbolic): each in the class the compiler takes is
// built once and runs on the memchecked simulator at its dims' bounds, 1 and primes, equal to the
// reference interpreter at those sizes (checkRows); each with an op the compiler refuses is
// refused with one error naming a kernel and that op, never compiled.
func TestSymbolicRandomGraphs(t *testing.T) {
	n := 36
	if testing.Short() {
		n = 8
	}
	rng := rand.New(rand.NewPCG(27, 3))
	seen := map[string]int{}
	for seed := range n {
		g, refused := randgraph.Symbolic(rng)
		seen[refused]++
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if refused == "" {
				checkRows(t, g)
				return
			}
			_, err := compiler.Compile(g, compiler.Options{})
			if err == nil {
				t.Fatalf("compiled a graph with %s over its rows\n%s", refused, g)
			}
			prefix := "graph symbolic has symbolic dims: "
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, " kernel k") || !strings.Contains(msg, refused) {
				t.Errorf("refused with %q, want one naming the kernel and %s\n%s", msg, refused, g)
			}
		})
	}
	for _, r := range append(randgraph.Refusals(), "") {
		if seen[r] == 0 && !testing.Short() {
			t.Errorf("no graph with %q among %d: %v", r, n, seen)
		}
	}
}
