//go:build !(linux && (amd64 || arm64)) || nocuda

package dynlib

import (
	"errors"
	"fmt"
	"runtime"
)

// Unavailable is why this build cannot open what (such as "the CUDA driver"): the platform is
// not one gcomp opens libraries on, or the build tag nocuda left the loader out.
func Unavailable(what string) error {
	if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		return errors.New("this gcomp was built with the tag nocuda")
	}
	return fmt.Errorf("gcomp loads %s on linux/amd64 and linux/arm64, not on %s/%s", what, runtime.GOOS, runtime.GOARCH)
}

// Open fails with Unavailable's reason, after s.NoLibrary when set: this build opens no library.
func Open(path string, s Spec) error {
	err := Unavailable("NVIDIA's libraries")
	if s.NoLibrary != nil {
		return fmt.Errorf("%w: %v", s.NoLibrary, err)
	}
	return err
}
