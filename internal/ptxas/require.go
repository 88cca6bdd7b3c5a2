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
	p, err := Find()
	if err == nil {
		return p
	}
	if os.Getenv("GCOMP_REQUIRE_PTXAS") == "1" {
		t.Fatalf("GCOMP_REQUIRE_PTXAS=1 but %v", err)
	}
	t.Skipf("SKIPPING: NO PTXAS: %v (set GCOMP_REQUIRE_PTXAS=1 to make this a failure)", err)
	return ""
}

// Require12 is Require for CUDA 12.4's ptxas (Find12); make tools fetches it.
func Require12(t testing.TB) string {
	t.Helper()
	p, err := Find12()
	if err == nil {
		return p
	}
	if os.Getenv("GCOMP_REQUIRE_PTXAS") == "1" {
		t.Fatalf("GCOMP_REQUIRE_PTXAS=1 but %v", err)
	}
	t.Skipf("SKIPPING: NO PTXAS 12.4: %v (set GCOMP_REQUIRE_PTXAS=1 to make this a failure)", err)
	return ""
}
