// Package cudatest finds, for tests, the CUDA driver library that
// scripts/fetch-cuda-tools.sh unpacks beside ptxas under .cache/cuda at the
// module root. The library loads and initializes on machines without a GPU,
// where cuInit reports CUDA_ERROR_NO_DEVICE; that is what the loader tests
// exercise.
package cudatest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
)

// RequireEnv is the environment variable that turns a missing library
// (like a missing ptxas) from a skip into a failure, as in CI.
const RequireEnv = "GCOMP_REQUIRE_PTXAS"

// Find returns $GCOMP_CUDA_LIB if set, else the libcuda.so.1 that the
// fetch script unpacked in the tree holding ptxas (DIR/usr/bin/ptxas and
// DIR/usr/lib/ARCH/nvidia/current/libcuda.so.1).
func Find() (string, error) {
	if p := os.Getenv("GCOMP_CUDA_LIB"); p != "" {
		return p, nil
	}
	bin, err := ptxas.Find()
	if err != nil {
		return "", fmt.Errorf("no libcuda.so.1: %v", err)
	}
	usr := filepath.Dir(filepath.Dir(bin))
	m, _ := filepath.Glob(filepath.Join(usr, "lib", "*", "nvidia", "current", "libcuda.so.1"))
	if len(m) == 0 {
		return "", fmt.Errorf("no libcuda.so.1 under %s; run scripts/fetch-cuda-tools.sh", filepath.Join(usr, "lib"))
	}
	return m[0], nil
}

// Library returns the path of the driver library. Without it the test is
// skipped, or fails when GCOMP_REQUIRE_PTXAS is set.
func Library(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("%v (%s is set)", err, RequireEnv)
		}
		t.Skip(err)
	}
	return p
}
