package nvvm

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
)

// classes groups kernels equal up to names as codegen/ptx's Module does (plan.ShareKey): the
// first kernel of each class is lowered once, and the others launch its function with their own
// buffers, so both producers give the same launch plan shape. uniq are those first kernels in
// order, of[i] the class of kernels[i] and users[c] the names of the kernels of class c.
func classes(kernels []plan.Kernel) (uniq []plan.Kernel, of []int, users [][]string, err error) {
	seen := map[string]bool{}
	byKey := map[string]int{}
	of = make([]int, len(kernels))
	for i, k := range kernels {
		if seen[k.Name] {
			return nil, nil, nil, fmt.Errorf("%s: two kernels have this name", k.Name)
		}
		seen[k.Name] = true
		key := plan.ShareKey(k)
		if c, ok := byKey[key]; ok && key != "" {
			of[i] = c
			users[c] = append(users[c], k.Name)
			continue
		}
		byKey[key] = len(uniq)
		of[i] = len(uniq)
		uniq = append(uniq, k)
		users = append(users, []string{k.Name})
	}
	return uniq, of, users, nil
}

// expand gives every kernel its launch from its class's (one per uniq kernel, in order): the
// first kernel of a class runs its own entry, the others rebind it to their buffers.
func expand(kernels []plan.Kernel, uniq []plan.Kernel, of []int, launches []plan.Launch) []plan.Launch {
	out := make([]plan.Launch, len(kernels))
	for i, k := range kernels {
		c := of[i]
		l := launches[c]
		if k.Name != uniq[c].Name {
			l = plan.Rebind(l, k)
		}
		l.Entry = uniq[c].Name
		out[i] = l
	}
	return out
}
