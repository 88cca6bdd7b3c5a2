package tensorio

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// An interrupted command removes the temporary file of a write in progress: RemoveTemporaries
// while the write runs leaves nothing behind, and the write then fails instead of publishing.
func TestRemoveTemporaries(t *testing.T) {
	dir := t.TempDir()
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- WriteFileAtomic(filepath.Join(dir, "w.safetensors"), func(w io.Writer) error {
			close(started)
			<-release
			_, err := io.WriteString(w, "late")
			return err
		})
	}()
	<-started
	if m, _ := filepath.Glob(filepath.Join(dir, ".w.safetensors.tmp*")); len(m) != 1 {
		t.Fatalf("temporaries during the write: %v, want one", m)
	}
	RemoveTemporaries()
	if names := listDir(t, dir); len(names) != 0 {
		t.Errorf("after RemoveTemporaries the directory holds %v", names)
	}
	close(release)
	if err := <-done; err == nil {
		t.Error("the write whose temporary was removed succeeded")
	}
	if names := listDir(t, dir); len(names) != 0 {
		t.Errorf("after the write the directory holds %v", names)
	}
	// A finished write is no longer tracked: removing temporaries now removes nothing.
	path := filepath.Join(dir, "x")
	if err := WriteFileAtomic(path, writeString("x")); err != nil {
		t.Fatal(err)
	}
	RemoveTemporaries()
	if _, err := os.Stat(path); err != nil {
		t.Error(err)
	}
}
