package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// statsAtSizes are the sizes --stats-at NAME=VALUE names, every dim of g not named at its
// bound. Each value must be an integer in its dim's range; each dim is named at most once.
func statsAtSizes(g *ir.Graph, specs []string) (map[string]int64, error) {
	if len(g.Dims) == 0 {
		return nil, fmt.Errorf("--stats-at: graph %s declares no dims", g.Name)
	}
	env := map[string]int64{}
	for _, d := range g.Dims {
		env[d.Name] = int64(d.Hi)
	}
	named := map[string]bool{}
	for _, s := range specs {
		name, val, ok := strings.Cut(s, "=")
		n, err := strconv.ParseInt(val, 10, 64)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("--stats-at %q: want NAME=VALUE, an integer size for one of the model's dims", s)
		}
		i := slices.IndexFunc(g.Dims, func(d ir.Dim) bool { return d.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("--stats-at %s: graph %s has no dim %q (its dims: %s)", s, g.Name, name, compiler.DimNames(g))
		}
		if named[name] {
			return nil, fmt.Errorf("--stats-at %s: dim %s is named twice", s, name)
		}
		if d := g.Dims[i]; n < int64(d.Lo) || n > int64(d.Hi) {
			return nil, fmt.Errorf("--stats-at %s: %d is outside %s's range [%d,%d]", s, n, name, d.Lo, d.Hi)
		}
		named[name], env[name] = true, n
	}
	return env, nil
}

// writeStatsAt prints the bound's report and the one at env, each labeled with its sizes (and
// the one at env with the specialization it runs, if any): two tables, or one JSON object
// {"bound": {sizes, stats}, "at": {sizes, variant, stats}}.
func writeStatsAt(w io.Writer, format string, g *ir.Graph, bound, at *passes.Stats, env map[string]int64, variant string) {
	boundEnv := boundSizes(g)
	if format == "json" {
		type sized struct {
			Sizes   map[string]int64 `json:"sizes"`
			Variant string           `json:"variant,omitempty"`
			Stats   *passes.Stats    `json:"stats"`
		}
		b, err := json.MarshalIndent(struct {
			Bound sized `json:"bound"`
			At    sized `json:"at"`
		}{sized{boundEnv, "", bound}, sized{env, variant, at}}, "", "  ")
		if err != nil {
			panic(err) // plain structs always marshal
		}
		w.Write(append(b, '\n'))
		return
	}
	fmt.Fprintf(w, "at the bound (%s):\n", compiler.SizesString(g, boundEnv))
	bound.WriteTable(w)
	if variant != "" {
		fmt.Fprintf(w, "\nat %s (the variant for %s):\n", compiler.SizesString(g, env), variant)
	} else {
		fmt.Fprintf(w, "\nat %s:\n", compiler.SizesString(g, env))
	}
	at.WriteTable(w)
}

// boundSizes is every dim of g at its upper bound, the sizes a build's own report is at.
func boundSizes(g *ir.Graph) map[string]int64 {
	env := map[string]int64{}
	for _, d := range g.Dims {
		env[d.Name] = int64(d.Hi)
	}
	return env
}
