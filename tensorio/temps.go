package tensorio

import (
	"os"
	"sync"
)

// temps holds the temporary files and directories that writes in progress have made, so that an
// interrupted command can remove them (RemoveTemporaries) instead of leaving hidden
// .NAME.tmpNNN files behind.
var temps struct {
	sync.Mutex
	paths map[string]bool
}

// TrackTemporary records path (a file or directory) as a temporary that RemoveTemporaries
// removes; the returned function forgets it again, once it has been renamed or removed.
func TrackTemporary(path string) (forget func()) {
	temps.Lock()
	defer temps.Unlock()
	return trackLocked(path)
}

// trackLocked is TrackTemporary with temps' lock held.
func trackLocked(path string) (forget func()) {
	if temps.paths == nil {
		temps.paths = map[string]bool{}
	}
	temps.paths[path] = true
	return func() {
		temps.Lock()
		defer temps.Unlock()
		delete(temps.paths, path)
	}
}

// CreateTemp is os.CreateTemp with the new file tracked (TrackTemporary) before any interrupt can
// see it: creation and tracking happen under the lock RemoveTemporaries takes, so an interrupt
// arriving between the two cannot leave the file behind.
func CreateTemp(dir, pattern string) (f *os.File, forget func(), err error) {
	temps.Lock()
	defer temps.Unlock()
	if f, err = os.CreateTemp(dir, pattern); err != nil {
		return nil, nil, err
	}
	return f, trackLocked(f.Name()), nil
}

// MkdirTemp is os.MkdirTemp with the new directory tracked, as CreateTemp.
func MkdirTemp(dir, pattern string) (path string, forget func(), err error) {
	temps.Lock()
	defer temps.Unlock()
	if path, err = os.MkdirTemp(dir, pattern); err != nil {
		return "", nil, err
	}
	return path, trackLocked(path), nil
}

// RemoveTemporaries removes every temporary a write in progress has made. A command calls it when
// it is interrupted (SIGINT, SIGTERM), just before it exits.
func RemoveTemporaries() {
	temps.Lock()
	defer temps.Unlock()
	for p := range temps.paths {
		os.RemoveAll(p)
	}
	temps.paths = nil
}
