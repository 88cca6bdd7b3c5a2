//go:build !(linux && (amd64 || arm64)) || nocuda

package nccl

import (
	"fmt"

	"github.com/gcomp/gcomp/internal/dynlib"
)

// openLibrary fails: this build cannot load NCCL, because the platform is not
// one gcomp loads it on or because the build tag nocuda left the loader out.
func openLibrary(string) (*Library, error) {
	return nil, fmt.Errorf("%w: %v", ErrNoLibrary, dynlib.Unavailable("NCCL"))
}
