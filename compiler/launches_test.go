package compiler_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
)

// Each example's launch plan is pinned launch by launch: the entry each launch runs (launches
// of kernels with the same code share the entry of the first), its configuration and what every
// argument binds. The module holds exactly the entries the launches name.
func TestExampleLaunches(t *testing.T) {
	for _, m := range examples.All() {
		t.Run(m.Name, func(t *testing.T) {
			g, err := frontend.Build(m.Name, m.Model)
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			art := res.Artifact
			entries := map[string]bool{}
			for _, k := range art.Plan.Kernels {
				entries[k.Entry] = true
			}
			if n := strings.Count(string(art.PTX), ".visible .entry "); n != len(entries) {
				t.Errorf("the module has %d entries; the launches run %d", n, len(entries))
			}
			for e := range entries {
				if !strings.Contains(string(art.PTX), ".visible .entry "+e+"(") {
					t.Errorf("no entry %s in the module", e)
				}
			}
			path, comment := golden.Example(filepath.Join(".."), m.Name)
			golden.CheckSections(t, path, comment, "compiler", []txtar.File{{Name: "launches.txt", Data: []byte(launches(art.Plan))}})
		})
	}
}

// launches prints a plan's launches one per line: "name [entry] grid block shared: args".
func launches(p *artifact.Plan) string {
	var sb strings.Builder
	for _, k := range p.Kernels {
		sb.WriteString(k.Name)
		if k.Entry != k.Name {
			sb.WriteString(" runs " + k.Entry)
		}
		if k.BindTime {
			sb.WriteString(" (bind)")
		}
		if k.PDL {
			sb.WriteString(" (pdl)")
		}
		fmt.Fprintf(&sb, " grid %v block %v shared %d:", k.Grid, k.Block, k.SharedBytes)
		for _, a := range k.Args {
			switch a.Kind {
			case artifact.ArgArena:
				fmt.Fprintf(&sb, " %s@%d", a.Name, a.Offset)
			case artifact.ArgScratch:
				fmt.Fprintf(&sb, " scratch@%d+%d", a.Offset, a.Bytes)
			case artifact.ArgError:
				fmt.Fprintf(&sb, " error@%d", a.Offset)
			default:
				fmt.Fprintf(&sb, " %s:%s", a.Kind, a.Name)
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}
