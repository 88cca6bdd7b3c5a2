package artifact

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Alignment is the byte alignment of every buffer in the arena (the widest vector access and
// what cudaMalloc guarantees).
const Alignment = 256

// MemoryPlan places the intermediate buffers of a kernel graph in one device arena. Inputs,
// parameters and outputs have buffers of their own and are listed for the runtime. The passes
// compute it (passes.Plan is this type); it lives here because the runtime reads it from the
// launch plan and should depend on the artifact, not on the optimizer.
type MemoryPlan struct {
	ArenaBytes int64  `json:"arena_bytes"`
	Alignment  int    `json:"alignment"`
	Heuristic  string `json:"heuristic"` // the placement that gave the smaller arena
	NaiveBytes int64  `json:"naive_bytes"`
	// LowerBoundBytes is the most temp bytes live at one kernel at their exact sizes (the
	// issue's lower_bound_bytes); no aligned plan reaches it when small temps meet.
	LowerBoundBytes int64 `json:"lower_bound_bytes"`
	// AlignedLowerBoundBytes: no 256-byte-aligned placement needs less (see alignedBound).
	AlignedLowerBoundBytes int64          `json:"lower_bound_aligned_bytes"`
	Buffers                []PlacedBuffer `json:"buffers"`
	Inputs                 []IOBuffer     `json:"inputs"`
	Params                 []IOBuffer     `json:"params"`
	Outputs                []IOBuffer     `json:"outputs"`
}

// PlacedBuffer is an intermediate in the arena: bytes [Offset, Offset+Size) from the kernel
// LiveFrom (its writer) through LiveTo (its last reader), inclusive.
type PlacedBuffer struct {
	Name      string `json:"name"`
	Offset    int64  `json:"offset"`
	Size      int64  `json:"size"`
	LiveFrom  int    `json:"live_from"`
	LiveTo    int    `json:"live_to"`
	InPlaceOf string `json:"in_place_of,omitempty"` // an elementwise kernel overwrites this dead input
}

// IOBuffer is a buffer outside the arena.
type IOBuffer struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Size int64  `json:"size"`
	// InPlaceOf (outputs only) names the input whose buffer the output is: a kernel updates the
	// donated input in place (an update_slice's KV cache row), so after a run the input holds
	// the output's value and feeding the output back into it moves nothing.
	InPlaceOf string `json:"in_place_of,omitempty"`
	// Sym (plans with dims only) is each axis's size as an expression over the dims, where
	// Type gives the bound: "batch", "3*batch", "768" (dims.go).
	Sym []string `json:"sym,omitempty"`
}

// JSON returns the memory plan as indented JSON (the --emit plan format of the passes).
func (p *MemoryPlan) JSON() []byte { return indentedJSON(p) }

// String prints the memory plan as a table, one arena buffer per line.
func (p *MemoryPlan) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "arena %d bytes (%s; lower bound %d, %d aligned; naive %d)\n",
		p.ArenaBytes, p.Heuristic, p.LowerBoundBytes, p.AlignedLowerBoundBytes, p.NaiveBytes)
	for _, b := range p.Buffers {
		fmt.Fprintf(&sb, "  %-12s offset %9d size %9d live k%d..k%d", b.Name, b.Offset, b.Size, b.LiveFrom, b.LiveTo)
		if b.InPlaceOf != "" {
			fmt.Fprintf(&sb, " in place of %s", b.InPlaceOf)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func indentedJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // the plan types have only marshalable fields
	}
	return append(b, '\n')
}
