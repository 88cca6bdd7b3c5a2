package artifact

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/tensorio"
)

// Cubin is a precompiled image of the module for one GPU architecture, stored beside the PTX as
// nvcc's fat binaries store SASS beside PTX: a runtime loads the image matching its GPU and falls
// back to JIT-compiling the PTX.
type Cubin struct {
	Arch   string `json:"arch"`   // "sm_80"
	File   string `json:"file"`   // "model.sm_80.cubin", beside the plan
	SHA256 string `json:"sha256"` // of the file's bytes
}

var archName = regexp.MustCompile(`^sm_[0-9]{2,3}$`)

// CheckArch reports whether arch names a GPU architecture ("sm_80").
func CheckArch(arch string) error {
	if !archName.MatchString(arch) {
		return fmt.Errorf("%q is not a GPU architecture (sm_80, sm_90, ...)", arch)
	}
	return nil
}

// CubinPath is where the image for arch of a module file lives: model.ptx → model.sm_80.cubin.
func CubinPath(ptxPath, arch string) string {
	return strings.TrimSuffix(ptxPath, filepath.Ext(ptxPath)) + "." + arch + ".cubin"
}

// cubinWrites are the writes of a.Cubins beside ptxPath, in architecture order; it lists them in
// the plan.
func (a *Artifact) cubinWrites(ptxPath string) ([]tensorio.FileWrite, error) {
	a.Plan.Cubins = nil
	archs := make([]string, 0, len(a.Cubins))
	for arch := range a.Cubins {
		archs = append(archs, arch)
	}
	slices.Sort(archs)
	var writes []tensorio.FileWrite
	for _, arch := range archs {
		if err := CheckArch(arch); err != nil {
			return nil, err
		}
		img := a.Cubins[arch]
		path := CubinPath(ptxPath, arch)
		writes = append(writes, tensorio.FileWrite{Path: path, Write: func(w io.Writer) error {
			_, err := w.Write(img)
			return err
		}})
		a.Plan.Cubins = append(a.Plan.Cubins, Cubin{Arch: arch, File: filepath.Base(path), SHA256: hash(img)})
	}
	return writes, nil
}

// readCubins loads the images the plan lists. Each must be the file CubinPath names for its
// architecture (a plan's file names never lead elsewhere) with the recorded hash.
func readCubins(ptxPath string, p *Plan) (map[string][]byte, error) {
	if len(p.Cubins) == 0 {
		return nil, nil
	}
	imgs := map[string][]byte{}
	for _, c := range p.Cubins {
		if err := CheckArch(c.Arch); err != nil {
			return nil, fmt.Errorf("cubin: %v", err)
		}
		path := CubinPath(ptxPath, c.Arch)
		if c.File != filepath.Base(path) {
			return nil, fmt.Errorf("the %s cubin is %q; gcomp keeps it in %s", c.Arch, c.File, filepath.Base(path))
		}
		if imgs[c.Arch] != nil {
			return nil, fmt.Errorf("two %s cubins", c.Arch)
		}
		img, err := tensorio.ReadFile(path, maxFileBytes)
		if err != nil {
			return nil, fmt.Errorf("cannot read the %s cubin: %v", c.Arch, err)
		}
		if hash(img) != c.SHA256 {
			return nil, fmt.Errorf("%s was not made with this plan: its SHA-256 differs (rebuild with gcomp build)", path)
		}
		imgs[c.Arch] = img
	}
	return imgs, nil
}
