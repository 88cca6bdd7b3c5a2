package ptx

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/examples/transformer"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/golden"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// Every kernel the pass pipeline forms for the examples compiles, assembles without spills, runs
// in the simulator with all checks on and matches the reference interpreter on its own body. The
// issue's static performance targets hold for each: occupancy from ptxas's registers and shared
// memory (the formula of occupancy, perf_test.go) ≥ 25% for contraction kernels and ≥ 50% for
// the others, and the simulator's global load and store coalescing ≥ 90% for loop and reduction
// kernels (coalescingExceptions names the ones that cannot).
func TestExampleKernels(t *testing.T) {
	for _, m := range examples.Tutorials {
		t.Run(m.Name, func(t *testing.T) {
			if testing.Short() && m.Slow {
				t.Skip("-short: the larger examples take 5 s each")
			}
			g, err := frontend.Build(m.Name, m.Model)
			if err != nil {
				t.Fatalf("example does not build: %v", err)
			}
			res, err := passes.Run(g, passes.Options{})
			if err != nil {
				t.Fatalf("pass pipeline: %v", err)
			}
			var kernels []Kernel
			for _, kn := range res.Kernels.Kernels {
				kernels = append(kernels, kernelOf(kn, kn.Name))
			}
			text, launches, err := Module(kernels, Target{SM: 80})
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
			info := assembleModule(t, kernels)
			var regs, sums strings.Builder
			for i, k := range kernels {
				l := launches[i]
				threads := l.Block[0] * l.Block[1] * l.Block[2]
				target := 0.5
				if isContraction(k.Graph) {
					target = 0.25
				}
				var occ [2]float64
				for j, arch := range []string{"sm_80", "sm_90"} {
					ki := info[arch][l.Entry]
					occ[j] = occupancy(arch, ki.Registers, threads, ki.SharedBytes+l.SharedBytes)
					if occ[j] < target {
						t.Errorf("%s %s: occupancy %.1f%% (%d registers, %d threads, %d bytes shared), target %.0f%%",
							k.Name, arch, 100*occ[j], ki.Registers, threads, ki.SharedBytes+l.SharedBytes, 100*target)
					}
				}
				fmt.Fprintf(&regs, "%s [%d %d] threads %d shared %d occupancy [%.1f%% %.1f%%]\n", k.Name,
					info["sm_80"][l.Entry].Registers, info["sm_90"][l.Entry].Registers, threads,
					info["sm_80"][l.Entry].SharedBytes+l.SharedBytes, 100*occ[0], 100*occ[1])
				if l.Entry == k.Name {
					entry, _, _ := Generate(k, Target{SM: 80})
					fmt.Fprintf(&sums, "%x %s\n", sha256.Sum256([]byte(entry)), k.Name)
				} else {
					fmt.Fprintf(&sums, "  runs %s: %s\n", l.Entry, k.Name)
				}
			}
			sections := []txtar.File{{Name: "registers.txt", Data: []byte(regs.String())}}
			if len(text) < maxGoldenModule {
				sections = append(sections, txtar.File{Name: "module.ptx", Data: []byte(text)})
			} else {
				sections = append(sections, txtar.File{Name: "kernels.sha256", Data: []byte(sums.String())})
			}
			// The sections say what they hold: registers.txt has ptxas registers, threads,
			// static shared bytes and occupancy per kernel (sm_80 sm_90); module.ptx the module,
			// or kernels.sha256 each entry's SHA-256 where the module is too large to keep, and
			// for a kernel that runs another's entry, that entry.
			path, comment := golden.Example(filepath.Join("..", ".."), m.Name)
			golden.CheckSections(t, path, comment, "ptx", sections)
			for i, k := range kernels {
				t.Run(k.Name, func(t *testing.T) {
					res := checkKernel(t, k, inputsFor(k.Graph, uint64(i), 1), false)
					if res == nil {
						return
					}
					st := res.stats
					ld := float64(st.GlobalLoadBytes) / float64(32*max(1, st.GlobalLoadSectors))
					sto := float64(st.GlobalStoreBytes) / float64(32*max(1, st.GlobalStoreSectors))
					if testing.Verbose() {
						t.Logf("registers %d/%d, loads %.1f%%, stores %.1f%% coalesced", res.regs["sm_80"], res.regs["sm_90"], 100*ld, 100*sto)
					}
					why, excepted := coalescingExceptions[m.Name+"/"+k.Name]
					if isContraction(k.Graph) || excepted && ld >= 0.74 && sto >= 0.74 {
						if excepted {
							t.Logf("coalescing %.1f%% / %.1f%%: %s", 100*ld, 100*sto, why)
						}
						return
					}
					if ld < 0.9 || sto < 0.9 {
						t.Errorf("loads %.1f%%, stores %.1f%% coalesced; target 90%%", 100*ld, 100*sto)
					}
				})
			}
		})
	}
}

// maxGoldenModule is the largest module an example's golden file keeps whole; larger ones keep
// one SHA-256 per entry.
const maxGoldenModule = 300 << 10

// coalescingExceptions are the example loop and reduction kernels below the 90% coalescing
// target, with the reason (docs/perf.md); they are held to 74%.
var coalescingExceptions = map[string]string{
	"rnn/k1_logsoftmax": "a row of 18 floats is 72 bytes in at least 3 sectors (96 bytes): 75% is the ceiling",
}

// isContraction reports whether a kernel computes a dot_general or conv2d.
func isContraction(g *ir.Graph) bool {
	for _, v := range live(g) {
		if v.Op == "dot_general" || v.Op == "conv2d" {
			return true
		}
	}
	return false
}

// BenchmarkGPT2Small times code generation for every kernel of GPT-2 small (12 layers, 128
// tokens) into one module: go test ./codegen/ptx -run '^$' -bench GPT2Small -benchtime 5x
func BenchmarkGPT2Small(b *testing.B) {
	kernels := moduleKernels(b, gpt.GPT2Small)
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
	kernels := moduleKernels(t, transformer.Model)
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
