package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/internal/ptxas"
)

// cubinArchs parses --cubin's list ("sm_80,sm_90"); the empty string is none.
func cubinArchs(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	var archs []string
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if err := artifact.CheckArch(a); err != nil {
			return nil, err
		}
		var sm int
		fmt.Sscanf(a, "sm_%d", &sm)
		if sm < 80 {
			return nil, fmt.Errorf("%s: gcomp's kernels need sm_80 or newer", a)
		}
		archs = append(archs, a)
	}
	return archs, nil
}

// addCubins assembles the module for each architecture with ptxas (found as the tests find it:
// $GCOMP_PTXAS, .cache/cuda, PATH). Without ptxas it notes so and leaves the PTX alone, which a
// GPU's driver JIT-compiles at load.
func addCubins(art *artifact.Artifact, archs []string, stderr io.Writer) error {
	if len(archs) == 0 {
		return nil
	}
	if _, err := ptxas.Find(); err != nil {
		fmt.Fprintf(stderr, "gcomp: note: no cubins: %v; the module is PTX only\n", err)
		return nil
	}
	art.Cubins = map[string][]byte{}
	for _, a := range archs {
		img, err := ptxas.Cubin(art.PTX, a)
		if err != nil {
			return fmt.Errorf("assembling the module for %s: %v", a, err)
		}
		art.Cubins[a] = img
	}
	return nil
}
