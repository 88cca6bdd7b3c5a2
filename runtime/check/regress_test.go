package check_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/check"
)

// Every defect found in compiled code (wrong numbers, a memcheck report, invalid PTX, an
// inconsistent launch plan) is kept as a named graph in testdata/regress (NAME.gir) and must
// pass what `gcomp check NAME.gir` does: compile, run on the simulator with every check on,
// match the reference interpreter. A leading comment line "// tf32" compiles with TF32, and
// "// target: sm_90" for another target; "// seeds: N" checks seeds 0..N-1 (default 2).
func TestRegressions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "regress", "*.gir"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no regression graphs: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".gir"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ir.Parse(file, src)
			if err == nil {
				err = ops.Verify(g)
			}
			if err != nil {
				t.Fatal(err)
			}
			target, seeds := header(t, string(src))
			res, err := compiler.Compile(g, compiler.Options{Target: target})
			if err != nil {
				t.Fatal(err)
			}
			for seed := range uint64(seeds) {
				inputs, params := values(t, g, seed)
				rep, err := check.Run(res.Artifact, inputs, params)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				for _, o := range rep.Outputs {
					if !o.Pass() {
						t.Errorf("seed %d: %s: %d elements outside tolerance; first %s", seed, o.Name, o.Bad, o.First)
					}
				}
			}
		})
	}
}

// header reads the options of a regression graph from its leading comment lines.
func header(t *testing.T, src string) (target ptx.Target, seeds int) {
	seeds = 2
	for _, line := range strings.Split(src, "\n") {
		c, ok := strings.CutPrefix(strings.TrimSpace(line), "//")
		if !ok {
			break
		}
		c = strings.TrimSpace(c)
		switch {
		case c == "tf32":
			target.TF32 = true
		case strings.HasPrefix(c, "target: sm_"):
			if _, err := fmt.Sscan(strings.TrimPrefix(c, "target: sm_"), &target.SM); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(c, "seeds:"):
			if _, err := fmt.Sscan(strings.TrimPrefix(c, "seeds:"), &seeds); err != nil {
				t.Fatal(err)
			}
		}
	}
	return target, seeds
}
