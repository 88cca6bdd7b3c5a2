//go:build unix

package golden

import (
	"os"
	"syscall"
)

// lockDir holds an exclusive lock on dir until the returned function is called: test binaries of
// several packages may update one golden file at once.
func lockDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
