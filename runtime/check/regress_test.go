package check_test

import (
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/internal/regress"
	"github.com/gcomp/gcomp/runtime/check"
)

// Every defect found in compiled code (wrong numbers, a memcheck report, invalid PTX, an
// inconsistent launch plan), and every correct result an earlier tolerance rule refused, is kept
// as a named graph in testdata/regress (NAME.gir) and must pass what `gcomp check NAME.gir` does:
// compile, run on the simulator with every check on, match the reference interpreter within the
// error bounds. Leading comment lines choose the target ("// tf32", "// target: sm_90") and the
// input seeds ("// seeds: N" for 0..N-1, "// seed: S"; default 0 and 1): see regress.Header.
func TestRegressions(t *testing.T) {
	regress.Run(t, filepath.Join("testdata", "regress"), func(t *testing.T, c regress.Case) {
		target := ptx.Target{SM: c.Header.SM, TF32: c.Header.TF32}
		res, err := compiler.Compile(c.Graph, compiler.Options{Target: target})
		if err != nil {
			t.Fatal(err)
		}
		for _, seed := range c.Header.Seeds {
			inputs, params := values(t, c.Graph, seed)
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
