package artifact

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/tensorio"
)

// validateNames checks the names a plan gives its inputs, parameters and outputs: each is unique
// in its kind and may name a file (run writes outputs as NAME.npy), so a hand-edited plan can
// never make a command write outside its output directory.
func (p *Plan) validateNames() error {
	for _, set := range []struct {
		kind  string
		names []string
	}{
		{ArgInput, ioNames(p.Inputs)},
		{ArgParam, ioNames(p.Params)},
		{ArgOutput, ioNames(p.Outputs)},
		{"output name", p.OutputNames},
	} {
		seen := map[string]bool{}
		for _, n := range set.names {
			if err := tensorio.CheckFileName(n); err != nil {
				return fmt.Errorf("%s: %v", set.kind, err)
			}
			if seen[n] {
				return fmt.Errorf("%s %q is declared twice", set.kind, n)
			}
			seen[n] = true
		}
	}
	return p.validateSourceNames()
}

// validateSourceNames checks that each source name pairs a name (any text: it names no file, and
// run derives a safe file name from it) with an input or output of the plan, once each way.
func (p *Plan) validateSourceNames() error {
	if p.SourceNames == nil {
		return nil
	}
	for _, set := range []struct {
		kind  string
		pairs [][2]string
		graph []string
	}{
		{"input", p.SourceNames.Inputs, ioNames(p.Inputs)},
		{"output", p.SourceNames.Outputs, p.OutputNames},
	} {
		file, graph := map[string]bool{}, map[string]bool{}
		for _, pair := range set.pairs {
			switch {
			case pair[0] == "":
				return fmt.Errorf("source_names: %s %q has an empty source name", set.kind, pair[1])
			case !slices.Contains(set.graph, pair[1]):
				return fmt.Errorf("source_names: the plan has no %s %q", set.kind, pair[1])
			case file[pair[0]] || graph[pair[1]]:
				return fmt.Errorf("source_names: %s %q or %q is named twice", set.kind, pair[0], pair[1])
			}
			file[pair[0]], graph[pair[1]] = true, true
		}
	}
	return nil
}

func ioNames(bufs []IOBuffer) []string {
	names := make([]string, len(bufs))
	for i, b := range bufs {
		names[i] = b.Name
	}
	return names
}

// maxFileBytes bounds a module or plan file read (both are a few MB for the largest models).
const maxFileBytes = 1 << 30

// validateSizes checks the sizes a runtime allocates before it allocates them: the arena and
// scratch sizes are not negative, and the arena is no larger than its buffers need (their
// furthest end, rounded up to the plan's alignment), so a hand-edited arena_bytes of 8 GiB is
// refused at once instead of allocated.
func (p *Plan) validateSizes() error {
	switch {
	case p.ArenaBytes < 0:
		return fmt.Errorf("arena_bytes %d is negative", p.ArenaBytes)
	case p.ScratchBytes < 0:
		return fmt.Errorf("scratch_bytes %d is negative", p.ScratchBytes)
	case p.ErrorBytes < 0 || p.ErrorBytes%ErrorWordBytes != 0 || p.ErrorBytes > ErrorWordBytes*int64(len(p.Kernels)):
		return fmt.Errorf("error_bytes %d is not %d bytes for some of the %d kernels", p.ErrorBytes, ErrorWordBytes, len(p.Kernels))
	case p.Alignment < 0 || p.Alignment > maxAlignment || p.Alignment&(p.Alignment-1) != 0:
		return fmt.Errorf("alignment %d is not a power of two up to %d", p.Alignment, maxAlignment)
	}
	var end int64
	for _, b := range p.Buffers {
		if b.Offset < 0 || b.Size < 0 || b.Offset > p.ArenaBytes || b.Size > p.ArenaBytes-b.Offset {
			return fmt.Errorf("arena buffer %s at %d, %d bytes, lies outside the %d-byte arena", b.Name, b.Offset, b.Size, p.ArenaBytes)
		}
		end = max(end, b.Offset+b.Size)
	}
	if align := int64(max(p.Alignment, 1)); p.ArenaBytes > (end+align-1)/align*align {
		return fmt.Errorf("arena_bytes %d is more than its buffers need (%d)", p.ArenaBytes, end)
	}
	return nil
}

// maxAlignment bounds the arena's alignment (the planner uses 256 bytes).
const maxAlignment = 1 << 16
