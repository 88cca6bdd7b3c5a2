package nvvm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/randgraph"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// llvmAs finds LLVM 14's assembler: llvm-as-14 on PATH (Debian's llvm-14, or the wrapper
// scripts/fetch-llvm.sh leaves in .cache/llvm/bin, which make test puts on PATH), LLVM 14's own
// directory, or that wrapper found from the working directory up. Without it the test skips,
// or fails on CI (CI=true or GCOMP_REQUIRE_PTXAS set), where make test fetches it.
func llvmAs(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"llvm-as-14", "/usr/lib/llvm-14/bin/llvm-as"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if dir, err := os.Getwd(); err == nil {
		for ; ; dir = filepath.Dir(dir) {
			p := filepath.Join(dir, ".cache", "llvm", "bin", "llvm-as-14")
			if _, err := exec.LookPath(p); err == nil {
				return p
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if os.Getenv("CI") == "true" || os.Getenv("GCOMP_REQUIRE_PTXAS") != "" {
		t.Fatal("llvm-as of LLVM 14 not found (make tools fetches it with scripts/fetch-llvm.sh)")
	}
	t.Skip("SKIPPING: llvm-as of LLVM 14 not found (scripts/fetch-llvm.sh, or apt-get install llvm-14)")
	return ""
}

// Every module the NVVM producer emits for the examples and the random graphs is valid LLVM IR
// to LLVM 14's llvm-as (users may feed `gcomp build --emit nvvm` to their own LLVM tools).
func TestLLVMAs(t *testing.T) {
	as := llvmAs(t)
	var graphs []*ir.Graph
	for _, m := range examples.Tutorials {
		g, err := frontend.Build(m.Name, m.Model)
		if err != nil {
			t.Fatal(err)
		}
		graphs = append(graphs, g)
	}
	n := 300
	if testing.Short() {
		n = 40
	}
	for seed := range n {
		graphs = append(graphs, randgraph.Graph(rand.New(rand.NewPCG(uint64(seed), 3))))
	}
	modules := 0
	for i, g := range graphs {
		res, err := passes.Run(g, passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var all []plan.Kernel
		for _, kn := range res.Kernels.Kernels {
			all = append(all, kernelOf(kn, fmt.Sprintf("g%d_%s", i, kn.Name)))
		}
		kernels, _ := supported(t, all)
		if len(kernels) == 0 {
			continue
		}
		ll, _, err := IR(kernels, plan.Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(as, "-o", "/dev/null", "-")
		cmd.Stdin = bytes.NewReader([]byte(ll))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("graph %d: llvm-as: %v\n%s", i, err, out)
		}
		modules++
	}
	if modules == 0 {
		t.Error("no module checked")
	}
}
