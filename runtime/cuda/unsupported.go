//go:build !gorgonia && !(linux && (amd64 || arm64))

package cuda

import (
	"fmt"
	"runtime"
)

func loadLibrary(path string) (Driver, error) {
	return nil, fmt.Errorf("%w: gcomp loads the CUDA driver on linux/amd64 and linux/arm64, not on %s/%s", ErrNoLibrary, runtime.GOOS, runtime.GOARCH)
}
