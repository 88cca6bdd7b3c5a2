package regress

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Header holds the options a regression graph's leading comment lines give ("// KEY: VALUE", or
// "// tf32"); other comment lines are prose.
type Header struct {
	TF32 bool // "// tf32": compile with TF32 tensor cores
	SM   int  // "// target: sm_90" (0: the default target)
	// Seeds are the input seeds to check: "// seeds: N" is 0..N-1, "// seed: S" (repeatable) is S;
	// 0 and 1 when neither is given.
	Seeds []uint64
	// Kernels is how many kernels fusion must form ("// kernels: N ..."); -1 when not pinned.
	Kernels int
	// Fusion holds MaxOps, MaxReads and MaxRow ("// fusion: MaxOps=A MaxReads=B MaxRow=C"); nil
	// when not given.
	Fusion *[3]int
}

// Case is one regression graph, parsed and verified.
type Case struct {
	File   string
	Src    []byte
	Graph  *ir.Graph
	Header Header
}

// Run runs check as a subtest named NAME for each dir/NAME.gir, after parsing and verifying the
// graph and reading its header; a folder without graphs fails.
func Run(t *testing.T, dir string, check func(t *testing.T, c Case)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.gir"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no regression graphs in %s: %v", dir, err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".gir"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			h, err := ParseHeader(string(src))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			g, err := ir.Parse(file, src)
			if err == nil {
				err = ops.Verify(g)
			}
			if err != nil {
				t.Fatal(err)
			}
			check(t, Case{File: file, Src: src, Graph: g, Header: h})
		})
	}
}

// ParseHeader reads the options of a regression graph from its leading comment lines.
func ParseHeader(src string) (Header, error) {
	h := Header{Kernels: -1}
	var seeds int
	for _, line := range strings.Split(src, "\n") {
		c, ok := strings.CutPrefix(strings.TrimSpace(line), "//")
		if !ok {
			break
		}
		c = strings.TrimSpace(c)
		key, val, _ := strings.Cut(c, ":")
		var err error
		switch key {
		case "tf32":
			h.TF32 = val == ""
		case "target":
			_, err = fmt.Sscanf(strings.TrimSpace(val), "sm_%d", &h.SM)
		case "seeds":
			_, err = fmt.Sscan(val, &seeds)
		case "seed":
			var s uint64
			_, err = fmt.Sscan(val, &s)
			h.Seeds = append(h.Seeds, s)
		case "kernels":
			_, err = fmt.Sscan(val, &h.Kernels)
		case "fusion":
			var f [3]int
			_, err = fmt.Sscanf(strings.TrimSpace(val), "MaxOps=%d MaxReads=%d MaxRow=%d", &f[0], &f[1], &f[2])
			h.Fusion = &f
		}
		if err != nil {
			return Header{}, fmt.Errorf("header line %q: %v", line, err)
		}
	}
	if seeds == 0 && h.Seeds == nil {
		seeds = 2
	}
	for s := range seeds {
		h.Seeds = append(h.Seeds, uint64(s))
	}
	return h, nil
}
