package ptxas

import (
	"os"
	"testing"
)

// Require returns the path of ptxas for a test. When ptxas is missing it
// skips the test with a loud message, or fails it when the environment sets
// GCOMP_REQUIRE_PTXAS=1 (CI does, after scripts/fetch-cuda-tools.sh).
func Require(t testing.TB) string {
	t.Helper()
	return require(t, Find, "PTXAS")
}

// Require12 is Require for CUDA 12.4's ptxas (Find12); make tools fetches it.
func Require12(t testing.TB) string {
	t.Helper()
	return require(t, Find12, "PTXAS 12.4")
}

func require(t testing.TB, find func() (string, error), what string) string {
	t.Helper()
	p, err := find()
	if err == nil {
		return p
	}
	if os.Getenv("GCOMP_REQUIRE_PTXAS") == "1" {
		t.Fatalf("GCOMP_REQUIRE_PTXAS=1 but %v", err)
	}
	t.Skipf("SKIPPING: NO %s: %v (set GCOMP_REQUIRE_PTXAS=1 to make this a failure)", what, err)
	return ""
}
