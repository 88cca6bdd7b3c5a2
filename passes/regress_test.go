package passes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// Every bug the property tests, fuzzing or an audit found is kept as a named graph in
// testdata/regress (NAME.gir) and must pass the pipeline property: every checker after every
// pass, the plan checker, and kernels that compute bit for bit what the source graph computes.
// A first-line comment "// kernels: N" also pins how many kernels fusion forms; a comment
// "// fusion: MaxOps=A MaxReads=B MaxRow=C" runs fusion with those bounds.
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
			if err != nil {
				t.Fatal(err)
			}
			var opt passes.Options
			if m := fusionBounds.FindStringSubmatch(string(src)); m != nil {
				opt.Fusion = passes.FusionOptions{MaxOps: atoi(m[1]), MaxReads: atoi(m[2]), MaxRow: atoi(m[3])}
			}
			res := checkPipeline(t, g, opt, 1)
			var want int
			if _, err := fmt.Sscanf(string(src), "// kernels: %d", &want); err == nil && len(res.Kernels.Kernels) != want {
				t.Errorf("%d kernels, want %d:\n%s", len(res.Kernels.Kernels), want, res.Kernels)
			}
		})
	}
}

var fusionBounds = regexp.MustCompile(`(?m)^// fusion: MaxOps=(\d+) MaxReads=(\d+) MaxRow=(\d+)$`)

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
