package passes_test

import (
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/internal/regress"
	"github.com/gcomp/gcomp/passes"
)

// Every bug the property tests, fuzzing or an audit found is kept as a named graph in
// testdata/regress (NAME.gir) and must pass the pipeline property: every checker after every
// pass, the plan checker, and kernels that compute bit for bit what the source graph computes.
// A leading comment "// kernels: N" also pins how many kernels fusion forms; a comment
// "// fusion: MaxOps=A MaxReads=B MaxRow=C" runs fusion with those bounds (regress.Header).
func TestRegressions(t *testing.T) {
	regress.Run(t, filepath.Join("testdata", "regress"), func(t *testing.T, c regress.Case) {
		var opt passes.Options
		if f := c.Header.Fusion; f != nil {
			opt.Fusion = passes.FusionOptions{MaxOps: f[0], MaxReads: f[1], MaxRow: f[2]}
		}
		res := checkPipeline(t, c.Graph, opt, 1)
		if want := c.Header.Kernels; want >= 0 && len(res.Kernels.Kernels) != want {
			t.Errorf("%d kernels, want %d:\n%s", len(res.Kernels.Kernels), want, res.Kernels)
		}
	})
}
