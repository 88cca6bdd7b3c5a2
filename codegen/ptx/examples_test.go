package ptx

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/examples/cnn"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/examples/linreg"
	"github.com/gcomp/gcomp/examples/lstm"
	"github.com/gcomp/gcomp/examples/mlp"
	"github.com/gcomp/gcomp/examples/rnn"
	"github.com/gcomp/gcomp/examples/transformer"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/passes"
	"golang.org/x/tools/txtar"
)

// Every kernel the pass pipeline forms for the examples compiles, assembles without spills, runs
// in the simulator with all checks on and matches the reference interpreter on its own body.
func TestExampleKernels(t *testing.T) {
	models := []struct {
		name  string
		model func(*frontend.Builder)
	}{
		{"linreg", linreg.Model}, {"mlp", mlp.Model}, {"cnn", cnn.Model}, {"rnn", rnn.Model},
		{"lstm", lstm.Model}, {"transformer", transformer.Model}, {"gpt", gpt.Model},
	}
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			if testing.Short() && (m.name == "cnn" || m.name == "lstm" || m.name == "gpt") {
				t.Skip("-short: the larger examples take 5 s each")
			}
			g, err := frontend.Build(m.name, m.model)
			if err != nil {
				t.Skipf("example does not build: %v", err)
			}
			res, err := passes.Run(g, passes.Options{})
			if err != nil {
				t.Skipf("pass pipeline: %v", err)
			}
			var kernels []Kernel
			for _, kn := range res.Kernels.Kernels {
				kernels = append(kernels, Kernel{Name: kn.Name, Graph: kn.Body})
			}
			text, _, err := Module(kernels, Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			// The bytes do not depend on GOMAXPROCS (or on anything but the graphs).
			prev := runtime.GOMAXPROCS(1)
			again, _, _ := Module(kernels, Target{SM: 80})
			runtime.GOMAXPROCS(prev)
			if again != text {
				t.Error("the module differs under GOMAXPROCS=1")
			}
			regs := assembleModule(t, kernels)
			sections := []txtar.File{{Name: "registers.txt", Data: []byte(regs)}}
			if m.name == "linreg" || m.name == "mlp" {
				sections = append(sections, txtar.File{Name: "module.ptx", Data: []byte(text)})
			}
			golden.CheckTxtar(t, filepath.Join("testdata", m.name+".txtar"),
				fmt.Sprintf("PTX for the %s example's kernels: ptxas registers per kernel (sm_80 sm_90)%s.\n", m.name,
					map[bool]string{true: " and the module", false: ""}[len(sections) > 1]), sections)
			for i, k := range kernels {
				t.Run(k.Name, func(t *testing.T) {
					res := checkKernel(t, k, inputsFor(k.Graph, uint64(i), 1), false)
					if res != nil && testing.Verbose() {
						st := res.stats
						t.Logf("registers %d/%d, loads %.0f%%, stores %.0f%% coalesced", res.regs["sm_80"], res.regs["sm_90"],
							100*float64(st.GlobalLoadBytes)/float64(32*max(1, st.GlobalLoadSectors)),
							100*float64(st.GlobalStoreBytes)/float64(32*max(1, st.GlobalStoreSectors)))
					}
				})
			}
		})
	}
}

// BenchmarkGPT2Small times code generation for every kernel of GPT-2 small (12 layers, 128
// tokens) into one module: go test ./codegen/ptx -run '^$' -bench GPT2Small -benchtime 5x
func BenchmarkGPT2Small(b *testing.B) {
	g, err := frontend.Build("gpt2small", gpt.GPT2Small)
	if err != nil {
		b.Skip(err)
	}
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		b.Skip(err)
	}
	var kernels []Kernel
	for _, kn := range res.Kernels.Kernels {
		kernels = append(kernels, Kernel{Name: kn.Name, Graph: kn.Body})
	}
	b.ResetTimer()
	for range b.N {
		text, _, err := Module(kernels, Target{SM: 80})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(text)), "bytes")
	}
	b.ReportMetric(float64(len(kernels)), "kernels")
}

// Every target's module assembles for its own architecture; an unknown target is an error.
func TestTargets(t *testing.T) {
	ptxas.Require(t)
	g, err := frontend.Build("transformer", transformer.Model)
	if err != nil {
		t.Skip(err)
	}
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		t.Skip(err)
	}
	var kernels []Kernel
	for _, kn := range res.Kernels.Kernels {
		kernels = append(kernels, Kernel{Name: kn.Name, Graph: kn.Body})
	}
	for _, sm := range []int{86, 89, 90} {
		text, _, err := Module(kernels, Target{SM: sm})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, fmt.Sprintf(".target sm_%d\n", sm)) {
			t.Errorf("sm_%d: wrong .target line", sm)
		}
		if _, err := ptxas.Assemble([]byte(text), fmt.Sprintf("sm_%d", sm)); err != nil {
			t.Errorf("sm_%d: %v", sm, err)
		}
	}
	if _, _, err := Module(kernels, Target{SM: 75}); err == nil {
		t.Error("sm_75 accepted")
	}
}
