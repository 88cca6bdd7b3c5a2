//go:build !gorgonia && (nocuda || !(linux && (amd64 || arm64)))

package cuda

import (
	"fmt"

	"github.com/gcomp/gcomp/internal/dynlib"
)

// loadLibrary fails: this build cannot load the driver, either because the
// platform is not one gcomp loads it on or because the build tag nocuda
// left the loader out (for a fully static binary).
func loadLibrary(path string) (Driver, error) {
	return nil, fmt.Errorf("%w: %v", ErrNoLibrary, dynlib.Unavailable("the CUDA driver"))
}
