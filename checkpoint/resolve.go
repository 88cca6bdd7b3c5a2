package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gcomp/gcomp/tensorio"
)

// resolve finds a file of the checkpoint folder dir. Names come from files (the index lists its
// shards), so each must resolve inside the folder, symbolic links included (tensorio.Inside). One
// layout is let through: Hugging Face's hub cache keeps a snapshot's files as links
// (REPO/snapshots/REV/NAME -> ../../blobs/HASH), so inside a folder named snapshots/REV a file
// may resolve anywhere inside REPO, and nowhere else. The path returned is dir/name, so errors
// name the file as the user sees it.
func resolve(dir, name string) (string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("checkpoint: %s: no such folder", dir)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("checkpoint: %s: not a folder (a checkpoint is a folder holding config.json)", dir)
	}
	root, rel := dir, name
	if abs, err := filepath.Abs(dir); err == nil && filepath.Base(filepath.Dir(abs)) == "snapshots" {
		root = filepath.Dir(filepath.Dir(abs))
		rel = filepath.Join("snapshots", filepath.Base(abs), name)
		if !filepath.IsLocal(name) { // keep Inside's message about the name as written
			root, rel = dir, name
		}
	}
	if _, err := tensorio.Inside(root, rel); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return filepath.Join(dir, name), nil // checked; errors name the file as the user sees it
}
