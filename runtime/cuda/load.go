package cuda

import (
	"bytes"

	"github.com/gcomp/gcomp/internal/dynlib"
)

// LibraryEnv is the environment variable naming the driver library to load
// when no path is given explicitly.
const LibraryEnv = "GCOMP_CUDA_LIB"

// DefaultLibrary is the driver library's name, searched for the way the
// dynamic loader searches (LD_LIBRARY_PATH, the ld.so cache, the system
// directories).
const DefaultLibrary = "libcuda.so.1"

// LibraryPath is the library Load opens for lib: lib itself if not empty,
// else $GCOMP_CUDA_LIB, else DefaultLibrary.
func LibraryPath(lib string) string { return dynlib.Path(lib, LibraryEnv, DefaultLibrary) }

// Load opens the CUDA driver library named by LibraryPath(lib) and returns
// its Driver, not yet initialized (call Init). Without a library the error
// wraps ErrNoLibrary. A library is opened once per process.
//
// Built with the tag gorgonia, Load returns the gorgonia.org/cu binding
// linked into the binary and ignores lib.
func Load(lib string) (Driver, error) {
	return loadLibrary(LibraryPath(lib))
}

// cString is the text in b up to the first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
