package tensorio

import (
	"os"
	"path/filepath"
	"testing"
)

// An interrupt that sees a temporary file on disk removes it: CreateTemp tracks the file before
// RemoveTemporaries can run (a regression: os.CreateTemp then TrackTemporary left a window in
// which a SIGTERM found the file untracked and left it behind).
func TestInterruptSeesEveryTemporary(t *testing.T) {
	for _, tc := range []struct {
		name   string
		create func(dir string) (func(), error)
	}{
		{"file", func(dir string) (func(), error) {
			f, forget, err := CreateTemp(dir, ".x.tmp*")
			if err == nil {
				f.Close()
			}
			return forget, err
		}},
		{"directory", func(dir string) (func(), error) {
			_, forget, err := MkdirTemp(dir, ".x.tmp*")
			return forget, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for i := 0; i < 2000; i++ {
				done := make(chan error, 1)
				go func() {
					_, err := tc.create(dir)
					done <- err
				}()
				// Interrupt as soon as the temporary is visible, as a signal may.
				for {
					if m, _ := filepath.Glob(filepath.Join(dir, ".x.tmp*")); len(m) > 0 {
						break
					}
				}
				RemoveTemporaries()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if left, _ := os.ReadDir(dir); len(left) != 0 {
					t.Fatalf("iteration %d: the interrupt left %s behind", i, left[0].Name())
				}
			}
		})
	}
}
