package nvrtc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/gcomp/gcomp/internal/dynlib"
)

// LibraryEnv names the NVRTC library to load when no path is given.
const LibraryEnv = "GCOMP_NVRTC_LIB"

// ErrNoLibrary is wrapped by Open's error when no NVRTC library was found.
var ErrNoLibrary = errors.New("no NVRTC library")

// libNames are NVRTC's sonames, newest first: CUDA 12's, then 11.2's
// (CUDA 11.2 to 11.8 share it).
var libNames = []string{"libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}

// Candidates lists the paths Open tries for lib, in order: lib itself if not
// empty; else $GCOMP_NVRTC_LIB; else every soname in the CUDA toolkit's lib64
// ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda), Debian's multiarch directory for this
// machine and
// .cache/nvrtc under the module root.
func Candidates(lib string) []string {
	if p := dynlib.Path(lib, LibraryEnv, ""); p != "" {
		return []string{p}
	}
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if d := os.Getenv(env); d != "" {
			dirs = append(dirs, filepath.Join(d, "lib64"))
		}
	}
	multiarch := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	dirs = append(dirs, "/usr/local/cuda/lib64", filepath.Join("/usr/lib", multiarch))
	if root := moduleRoot(); root != "" {
		dirs = append(dirs, filepath.Join(root, ".cache", "nvrtc", "usr", "lib", multiarch))
	}
	var out []string
	for _, d := range dirs {
		for _, n := range libNames {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out
}

// moduleRoot is the first directory at or above the working directory that
// holds go.mod, or "".
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// builtinsFor returns the builtins library beside lib, or "" when none is
// there: NVRTC dlopens libnvrtc-builtins.so.MAJOR.MINOR by name when it
// compiles, which fails unless it is already loaded or on the loader's path.
func builtinsFor(lib string) string {
	m, _ := filepath.Glob(filepath.Join(filepath.Dir(lib), "libnvrtc-builtins.so.*"))
	best := ""
	for _, p := range m {
		// Prefer the versioned file over a bare .so symlink; the glob is sorted.
		if strings.Count(filepath.Base(p), ".") >= 3 {
			best = p
		}
	}
	return best
}

// notFound is Open's error when no candidate loaded.
func notFound(tried []string, why []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, ": looked in --nvrtc-lib, $%s", LibraryEnv)
	for i := 0; i < len(tried); i++ {
		// Files of one directory that are not there make one line.
		dir, j := filepath.Dir(tried[i]), i
		var names []string
		for ; j < len(tried) && filepath.Dir(tried[j]) == dir && why[j] == "not there"; j++ {
			names = append(names, filepath.Base(tried[j]))
		}
		if len(names) > 1 {
			fmt.Fprintf(&b, "\n  %s: no %s", dir, strings.Join(names, ", "))
			i = j - 1
			continue
		}
		fmt.Fprintf(&b, "\n  %s: %s", tried[i], why[i])
	}
	b.WriteString("\ninstall Debian's libnvrtc11.2 and libnvrtc-builtins11.8 (non-free), or a CUDA toolkit, or run scripts/fetch-cuda-tools.sh --nvrtc; or point --nvrtc-lib or $" + LibraryEnv + " at libnvrtc.so")
	return fmt.Errorf("%w%s", ErrNoLibrary, b.String())
}
