//go:build !(linux && (amd64 || arm64)) || nocuda

package nccl

import (
	"fmt"
	"runtime"
)

// openLibrary fails: this build cannot load NCCL, because the platform is not
// one gcomp loads it on or because the build tag nocuda left the loader out.
func openLibrary(string) (*Library, error) {
	if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		return nil, fmt.Errorf("%w: this gcomp was built with the tag nocuda", ErrNoLibrary)
	}
	return nil, fmt.Errorf("%w: gcomp loads NCCL on linux/amd64 and linux/arm64, not on %s/%s", ErrNoLibrary, runtime.GOOS, runtime.GOARCH)
}
