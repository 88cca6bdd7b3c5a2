//go:build !gorgonia && (nocuda || !(linux && (amd64 || arm64)))

package cuda

import (
	"fmt"
	"runtime"
)

// loadLibrary fails: this build cannot load the driver, either because the
// platform is not one gcomp loads it on or because the build tag nocuda
// left the loader out (for a fully static binary).
func loadLibrary(path string) (Driver, error) {
	if nocuda {
		return nil, fmt.Errorf("%w: this gcomp was built with the tag nocuda", ErrNoLibrary)
	}
	return nil, fmt.Errorf("%w: gcomp loads the CUDA driver on linux/amd64 and linux/arm64, not on %s/%s", ErrNoLibrary, runtime.GOOS, runtime.GOARCH)
}
