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
