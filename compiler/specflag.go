package compiler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/ir"
)

// SetSpecialize sets o's specializations from their text form, the values of gcomp build's
// --specialize and of the library's Options.Specialize: NAME=BOUND splits dim NAME's range after
// BOUND (repeatable), auto asks the cost model (SpecializeAuto). Compile checks the names and
// bounds against the graph. A malformed value is an error naming it.
func (o *Options) SetSpecialize(specs []string) error {
	for _, s := range specs {
		if s == "auto" {
			o.SpecializeAuto = true
			continue
		}
		name, val, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(val)
		if !ok || name == "" || err != nil {
			return fmt.Errorf("specialize %q: want NAME=BOUND (an integer upper bound for one of the model's dims) or auto", s)
		}
		if o.Specialize == nil {
			o.Specialize = map[string][]int{}
		}
		o.Specialize[name] = append(o.Specialize[name], n)
	}
	return nil
}

// checkVariantCount refuses splits that make more programs than a plan holds
// (artifact.MaxVariants) before any of them is compiled: every combination of the dims'
// pieces is one.
func checkVariantCount(g *ir.Graph, splits map[string][]int, how string) error {
	n := 1
	var pieces []string
	for _, d := range g.Dims {
		k := len(splits[d.Name]) + 1
		if k > 1 {
			pieces = append(pieces, fmt.Sprintf("%s in %d pieces", d.Name, k))
		}
		if n *= k; n > artifact.MaxVariants {
			n = artifact.MaxVariants + 1 // the product may overflow; more is more
		}
	}
	if n > artifact.MaxVariants {
		return fmt.Errorf("specialize: %s%s make more than the %d variants a plan holds (every combination of the pieces is one): split fewer dims or at fewer bounds",
			strings.Join(pieces, ", "), how, artifact.MaxVariants)
	}
	return nil
}
