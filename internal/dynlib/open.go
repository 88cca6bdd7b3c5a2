//go:build linux && (amd64 || arm64) && !nocuda

package dynlib

import (
	"fmt"
	"runtime"

	"github.com/ebitengine/purego"
)

// Unavailable is why this build cannot open what (such as "the CUDA driver"): nil here.
func Unavailable(what string) error { return nil }

// Open opens the library at path (a file name is searched for the way the dynamic loader
// searches: LD_LIBRARY_PATH, the ld.so cache, the system directories) and registers s's
// functions. A library that cannot be opened gives the loader's message (dlerror's, which names
// the path), after s.NoLibrary when set. The library stays open for the life of the process
// unless it lacks a required function.
func Open(path string, s Spec) error {
	// dlerror's message is per thread: keep dlopen, dlsym and dlerror on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mode := purego.RTLD_NOW | purego.RTLD_GLOBAL
	if s.Local {
		mode = purego.RTLD_NOW | purego.RTLD_LOCAL
	}
	h, err := purego.Dlopen(path, mode)
	if err != nil {
		if s.NoLibrary != nil {
			return fmt.Errorf("%w: %v", s.NoLibrary, err)
		}
		return err
	}
	for _, f := range s.Required {
		addr, err := purego.Dlsym(h, f.Name)
		if err != nil || addr == 0 {
			purego.Dlclose(h)
			if s.Lacks != nil {
				return s.Lacks(f.Name)
			}
			return fmt.Errorf("%s lacks %s", path, f.Name)
		}
		purego.RegisterFunc(f.Ptr, addr)
	}
	for _, group := range s.Optional {
		addrs := make([]uintptr, len(group))
		for i, f := range group {
			if addrs[i], _ = purego.Dlsym(h, f.Name); addrs[i] == 0 {
				addrs = nil
				break
			}
		}
		for i, a := range addrs {
			purego.RegisterFunc(group[i].Ptr, a)
		}
	}
	return nil
}
