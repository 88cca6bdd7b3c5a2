package main

import (
	"fmt"
	"io"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// statsAtVariant returns the cost report at env of the program that runs it: the plan's own
// (the bound's kernel graph) or the specialization whose ranges hold env, with that variant's
// ranges ("" for a plan without variants).
func statsAtVariant(g *ir.Graph, env map[string]int64, opt passes.Options, res *passes.Result, c *compiler.Result) (*passes.Stats, string, error) {
	if c == nil || len(c.Variants) == 0 {
		at, err := compiler.StatsAt(g, env, opt, res.Kernels)
		return at, "", err
	}
	p := c.Artifact.Plan
	i := p.ChooseVariant(env)
	if i < len(c.Variants) {
		v := c.Variants[i]
		at, err := compiler.StatsAt(v.Graph, env, opt, v.Passes.Kernels)
		return at, artifact.RangesString(v.Ranges), err
	}
	at, err := compiler.StatsAt(g, env, opt, res.Kernels)
	return at, artifact.RangesString(p.OwnRanges), err
}

// writeVariants prints, under the bound's cost report, which sizes the bound's build runs and
// the specializations beside it.
func writeVariants(w io.Writer, art *artifact.Artifact) {
	if art == nil || len(art.Plan.Variants) == 0 {
		return
	}
	fmt.Fprintf(w, "the bound's build runs %s\n", artifact.RangesString(art.Plan.OwnRanges))
	for _, v := range art.Plan.Variants {
		fmt.Fprintf(w, "variant %s: %d kernels, arena %d bytes", artifact.RangesString(v.Ranges), len(v.Kernels), v.ArenaBytes)
		if v.Note != "" {
			fmt.Fprintf(w, " (%s)", v.Note)
		}
		fmt.Fprintln(w)
	}
}
