package compiler_test

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
)

// TestPDLLaunches: built for sm_90, the language-model examples' plans mark every launch PDL
// ("pdl": true in the plan's JSON, "(pdl)" in the golden's launch lines), and the module's every
// entry has one griddepcontrol.wait; for sm_80 no launch is marked (TestExampleLaunches' goldens).
func TestPDLLaunches(t *testing.T) {
	for _, m := range examples.LanguageModels {
		t.Run(m.Name, func(t *testing.T) {
			g, err := frontend.Build(m.Name, m.Model)
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{Target: ptx.Target{SM: 90}})
			if err != nil {
				t.Fatal(err)
			}
			plan, text := res.Artifact.Plan, string(res.Artifact.PTX)
			for _, k := range plan.Kernels {
				if !k.PDL {
					t.Errorf("%s is not marked PDL", k.Name)
				}
			}
			if n, e := strings.Count(text, "griddepcontrol.wait;"), strings.Count(text, ".visible .entry "); n != e {
				t.Errorf("%d waits in %d entries", n, e)
			}
			// Every GEMV template reading its weight (a parameter) by vectors loads its first
			// weights before the wait; the other kernels wait first.
			preloads := 0
			for _, entry := range strings.Split(text, ".visible .entry ")[1:] {
				name := entry[:strings.IndexByte(entry, '(')]
				pre := entry[:strings.Index(entry, "griddepcontrol.wait;")]
				early, gemv := strings.Contains(pre, "ld.global"), strings.Contains(entry, "// gemv:") && !strings.Contains(entry, ", 1 per load")
				if early != gemv {
					t.Errorf("%s: loads before its wait: %v, want %v", name, early, gemv)
				}
				if early {
					preloads++
				}
			}
			if preloads == 0 {
				t.Error("no entry loads its weights before its wait")
			}
			if !strings.Contains(string(plan.JSON()), `"pdl": true`) {
				t.Error(`the plan's JSON has no "pdl": true`)
			}
			golden.CheckTxtar(t, filepath.Join("testdata", "pdl_"+m.Name+".txtar"),
				"go test ./compiler -run TestPDLLaunches: "+m.Name+"'s launches built for sm_90\n",
				[]txtar.File{{Name: "launches.txt", Data: []byte(launches(plan))}})
		})
	}
}
