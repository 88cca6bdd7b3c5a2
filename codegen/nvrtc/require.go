package nvrtc

import (
	"os"
	"testing"
)

// Require returns NVRTC for a test, or skips the test when no library is
// found, unless GCOMP_REQUIRE_PTXAS=1 (CI) demands the tools.
func Require(t testing.TB) *Compiler {
	t.Helper()
	c, err := Open("")
	if err != nil {
		if os.Getenv("GCOMP_REQUIRE_PTXAS") == "1" {
			t.Fatalf("GCOMP_REQUIRE_PTXAS=1: %v", err)
		}
		t.Skipf("%v", err)
	}
	return c
}
