package artifact

import (
	"fmt"

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
	return nil
}

func ioNames(bufs []IOBuffer) []string {
	names := make([]string, len(bufs))
	for i, b := range bufs {
		names[i] = b.Name
	}
	return names
}
