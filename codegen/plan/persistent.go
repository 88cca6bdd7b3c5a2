package plan

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gcomp/gcomp/ir"
)

// maxStaticShared is the most static shared memory one block may declare.
const maxStaticShared = 48 << 10

// CheckPersistent checks a persistent kernel's shared memory layout: at most the static 48 KB,
// every value's slot 16-byte aligned and inside it.
func CheckPersistent(k Kernel) error {
	if k.SharedBytes < 0 || k.SharedBytes > maxStaticShared {
		return fmt.Errorf("persistent kernel with %d bytes of shared memory (at most %d)", k.SharedBytes, maxStaticShared)
	}
	sizes := map[string]int{}
	for _, st := range k.Stages {
		for _, v := range st.Graph.Inputs() {
			sizes[v.Name] = v.Type.Bytes()
		}
		for _, o := range st.Graph.Outputs {
			sizes[o.Name] = o.Value.Type.Bytes()
		}
	}
	for _, n := range slices.Sorted(maps.Keys(k.Shared)) {
		if off := k.Shared[n]; off < 0 || off%16 != 0 || off+sizes[n] > k.SharedBytes {
			return fmt.Errorf("shared value %s at offset %d: not 16-byte aligned or outside %d bytes", n, off, k.SharedBytes)
		}
	}
	return nil
}

// PersistThreads is the block of a persistent kernel (codegen/ptx's persistent.go).
const PersistThreads = 256

// LaneSplit tells whether a contraction stage of a persistent kernel has the lanes of a warp
// split each element's products (warpElements) rather than one thread fold them.
func LaneSplit(dot *ir.Value) bool { return laneSplit(dot) }

// WarpGroup is how many consecutive result elements of n a warp of a lane-split stage takes
// at once (warpElements' R): a power of two up to maxWarpGroup, small enough that every warp of
// the block gets a group.
func WarpGroup(n int) int {
	const warps = PersistThreads / 32
	r := 1
	for r < maxWarpGroup && r*warps < n {
		r *= 2
	}
	return r
}

// minLaneSplitK is the shortest contraction the lanes split: below it a weight row is at most
// 32 bytes, and the per-element fold's neighbouring threads read neighbouring rows in the same
// lines, while most lanes would idle in a split.
const minLaneSplitK = 8

// maxWarpGroup caps the elements a warp's lanes split at once. Each is unrolled (its own
// accumulator, operand addresses and fold), so the cap trades shuffles for code: on lstm, 32
// runs 1% fewer warp instructions than 16 but assembles to a third more SASS, which a
// persistent kernel's stages, each run once or twice per warp, fetch cold (docs/perf.md).
const maxWarpGroup = 16

// laneSplit tells whether a contraction stage runs warpElements: a dot_general whose rhs (the
// weight of a linear layer, [out, in] row-major) is contracted along its innermost dim, the
// last of the contraction index, so consecutive k are consecutive addresses. A rhs contracted
// along another dim ([in, out]) is read coalesced by the per-element fold already: neighbouring
// threads take neighbouring columns.
func laneSplit(dot *ir.Value) bool {
	if dot.Op != "dot_general" {
		return false
	}
	rc := dot.Attrs.Ints("rhs_contract")
	return len(rc) > 0 && rc[len(rc)-1] == dot.Args[1].Type.Shape.Rank()-1 && ContractLen(dot) >= minLaneSplitK
}

// ContractLen is K, the number of products of a dot_general result element.
func ContractLen(dot *ir.Value) int {
	k := 1
	for _, d := range dot.Attrs.Ints("lhs_contract") {
		k *= dot.Args[0].Type.Shape[d]
	}
	return k
}
