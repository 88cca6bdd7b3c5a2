//go:build gpu

package cuda_test

import "testing"

// CUDA graphs per set of sizes on the GPU (graphsizes_test.go's check on cuda:0).
func TestGPUGraphSizeBuckets(t *testing.T) {
	if n := checkSizeBuckets(t, openGPU(t, false)); n != 5 {
		t.Errorf("%d runs launched a graph, want 5", n)
	}
}
