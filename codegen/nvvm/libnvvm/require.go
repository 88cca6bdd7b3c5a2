package libnvvm

import (
	"os"
	"testing"
)

// Require loads libNVVM for a test. When it is missing it skips the test with a loud message,
// or fails it when the environment sets GCOMP_REQUIRE_PTXAS=1 (CI does, after make tools).
func Require(t testing.TB) *Lib {
	t.Helper()
	l, err := Load("")
	if err == nil {
		return l
	}
	if os.Getenv("GCOMP_REQUIRE_PTXAS") == "1" {
		t.Fatalf("GCOMP_REQUIRE_PTXAS=1 but %v", err)
	}
	t.Skipf("SKIPPING: NO LIBNVVM: %v (set GCOMP_REQUIRE_PTXAS=1 to make this a failure)", err)
	return nil
}
