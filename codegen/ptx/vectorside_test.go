package ptx

import (
	"fmt"
	"strings"
	"testing"
)

// vectorSideGraph is a contraction whose vector side (dims [B,] K) has no free dims, against a
// side with the given free dims, K contracted at position at (0 first, len(free) last) and the
// batch dim, if any, last. The epilogue adds an input sliced one element into its last dim (an
// unaligned view, as vector loads must respect) and an iota along dim 0 (coordinates, not just
// linear positions). vecRHS puts the vector side on the right.
func vectorSideGraph(dt string, free []int, at int, batch, vecRHS bool) string {
	const k, nb = 4, 3
	dims := func(d []int) string { return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(d)), ","), "[]") }
	other := append(append(append([]int{}, free[:at]...), k), free[at:]...)
	vec := []int{k}
	var res []int
	vecAttr, otherAttr := "contract=[0]", fmt.Sprintf("contract=[%d]", at)
	if batch {
		other = append(other, nb)
		vec = []int{nb, k}
		res = append(res, nb)
		vecAttr = "batch=[0], %scontract=[1]"
		otherAttr = fmt.Sprintf("batch=[%d], %%scontract=[%d]", len(other)-1, at)
	}
	res = append(res, free...)
	lhsAttr, rhsAttr := vecAttr, otherAttr
	lhs, rhs := vec, other
	if vecRHS {
		lhsAttr, rhsAttr = otherAttr, vecAttr
		lhs, rhs = other, vec
	}
	lhsAttr = "lhs_" + strings.Replace(lhsAttr, "%s", "lhs_", 1)
	rhsAttr = "rhs_" + strings.Replace(rhsAttr, "%s", "rhs_", 1)
	var s strings.Builder
	fmt.Fprintf(&s, "graph g {\n  input %%a : %s[%s]\n  input %%b : %s[%s]\n", dt, dims(lhs), dt, dims(rhs))
	fmt.Fprintf(&s, "  %%0 = dot_general(%%a, %%b) {%s, %s} : %s[%s]\n", lhsAttr, rhsAttr, dt, dims(res))
	if len(res) == 0 {
		fmt.Fprintf(&s, "  input %%c : %s[]\n  %%1 = add(%%0, %%c) : %s[]\n  output y = %%1\n}\n", dt, dt)
		return s.String()
	}
	wide := append([]int{}, res...)
	wide[len(wide)-1]++
	start, limit, stride := make([]int, len(res)), append([]int{}, res...), make([]int, len(res))
	start[len(res)-1], limit[len(res)-1] = 1, wide[len(wide)-1]
	for i := range stride {
		stride[i] = 1
	}
	fmt.Fprintf(&s, "  input %%c : %s[%s]\n", dt, dims(wide))
	fmt.Fprintf(&s, "  %%1 = slice(%%c) {limit=[%s], start=[%s], stride=[%s]} : %s[%s]\n", dims(limit), dims(start), dims(stride), dt, dims(res))
	fmt.Fprintf(&s, "  %%2 = iota() {dim=0, dtype=%s, shape=[%s]} : %s[%s]\n", dt, dims(res), dt, dims(res))
	fmt.Fprintf(&s, "  %%3 = add(%%0, %%1) : %s[%s]\n  %%4 = add(%%3, %%2) : %s[%s]\n  output y = %%4\n}\n", dt, dims(res), dt, dims(res))
	return s.String()
}

// A contraction with one side without free dims is 1×N (or M×1) with the other side's free dims
// filling N: the epilogue must address the result by its own coordinates, and group columns for
// vector loads and stores only where they are consecutive in one innermost row of the result.
// Free dims 0..3 (N a multiple of 4 and 2 with an innermost dim of 3), K first, middle or last,
// with and without a batch dim, the vector on either side, in f32, f16 and bf16.
func TestVectorSideContraction(t *testing.T) {
	frees := [][]int{{}, {6}, {4, 3}, {2, 2, 3}}
	for _, dt := range []string{"f32", "f16", "bf16"} {
		for _, free := range frees {
			ats := map[int]bool{0: true, len(free) / 2: true, len(free): true}
			for at := range len(free) + 1 {
				if !ats[at] {
					continue
				}
				for _, batch := range []bool{false, true} {
					for _, vecRHS := range []bool{false, true} {
						if testing.Short() && vecRHS {
							continue // M×1 runs long in the simulator and forms no column groups
						}
						name := fmt.Sprintf("%s_free%d_at%d_batch%v_vecrhs%v", dt, len(free), at, batch, vecRHS)
						t.Run(name, func(t *testing.T) {
							g := parse(t, vectorSideGraph(dt, free, at, batch, vecRHS))
							checkKernel(t, Kernel{Name: "k_vs", Graph: g}, inputsFor(g, uint64(len(free)*7+at), 1), false)
						})
					}
				}
			}
		}
	}
}
