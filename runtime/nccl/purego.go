//go:build linux && (amd64 || arm64) && !nocuda

package nccl

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/ebitengine/purego"
)

var (
	loadMu sync.Mutex
	loaded = map[string]*Library{} // by the path given to dlopen
)

// openLibrary opens the library at path (a file name is searched for the way
// the dynamic loader searches) and resolves every function.
func openLibrary(path string) (*Library, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if l := loaded[path]; l != nil {
		return l, nil
	}
	// dlerror's message is per thread: keep dlopen and dlerror on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoLibrary, err)
	}
	l := &Library{path: path}
	for _, s := range l.symbols() {
		addr, err := purego.Dlsym(h, s.name)
		if err != nil || addr == 0 {
			purego.Dlclose(h)
			return nil, fmt.Errorf("the NCCL library %s lacks %s (gcomp needs NCCL 2.10 or newer)", path, s.name)
		}
		purego.RegisterFunc(s.fptr, addr)
	}
	optional := []symbol{{"ncclGetLastError", &l.ncclGetLastError}, {"ncclCommInitRankScalable", &l.ncclCommInitRankScalable}}
	if runtime.GOARCH == "arm64" {
		optional = append(optional, symbol{"ncclCommInitRank", &l.ncclCommInitRankPtr})
	}
	for _, s := range optional {
		if addr, _ := purego.Dlsym(h, s.name); addr != 0 {
			purego.RegisterFunc(s.fptr, addr)
		}
	}
	loaded[path] = l
	return l, nil
}
