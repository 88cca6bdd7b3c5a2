package ptxas

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// corpusDir holds the LLVM-produced PTX corpus the simulator's tests run.
var corpusDir = filepath.Join("..", "..", "sim", "testdata", "llvm")

var reKernelComment = regexp.MustCompile(`(?m)^; Kernel: (\w+)$`)

// TestLLVMCorpus assembles every .ptx of the corpus for sm_80 and sm_90 and
// checks that its .ll documents the entry point ptxas finds.
func TestLLVMCorpus(t *testing.T) {
	lls, err := filepath.Glob(filepath.Join(corpusDir, "*.ll"))
	if err != nil {
		t.Fatal(err)
	}
	if len(lls) < 8 {
		t.Fatalf("corpus has %d .ll files, want at least 8", len(lls))
	}
	Require(t)
	for _, ll := range lls {
		name := strings.TrimSuffix(filepath.Base(ll), ".ll")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(ll)
			if err != nil {
				t.Fatal(err)
			}
			m := reKernelComment.FindSubmatch(src)
			if m == nil || string(m[1]) != name {
				t.Fatalf("%s does not start with a '; Kernel: %s' comment", ll, name)
			}
			for _, want := range []string{"; Params, in order:", "; Launch:", "; Semantics:"} {
				if !strings.Contains(string(src), want) {
					t.Errorf("%s: header comment lacks %q", ll, want)
				}
			}
			ptx, err := os.ReadFile(strings.TrimSuffix(ll, ".ll") + ".ptx")
			if err != nil {
				t.Fatalf("%v (run scripts/gen-llvm-ptx.sh)", err)
			}
			for _, arch := range []string{"sm_80", "sm_90"} {
				res, err := Assemble(ptx, arch)
				if err != nil {
					t.Fatalf("%s: %v", arch, err)
				}
				k := res.Kernel(name)
				if len(res.Kernels) != 1 || k == nil || k.Registers == 0 {
					t.Errorf("%s: kernels = %+v, want one entry %q", arch, res.Kernels, name)
				} else if k.SpillStores != 0 || k.SpillLoads != 0 {
					t.Errorf("%s: %s spills: %+v", arch, name, *k)
				}
			}
		})
	}
}
