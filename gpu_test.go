//go:build gpu

package gcomp_test

import (
	"testing"

	"github.com/gcomp/gcomp"
)

// On a GPU, 32 goroutines share one session of 4 streams over one copy of the weights.
func TestConcurrentRunsGPU(t *testing.T) {
	concurrentRuns(t, open(t, compileMLP(t), gcomp.SessionOptions{Device: "cuda:0", Pool: 4}))
}
