package nvvm

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/examples/gpt"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// modelKernels are the kernels of a model that the NVVM producer takes, named as the passes
// name them.
func modelKernels(t *testing.T, m func(*frontend.Builder)) []plan.Kernel {
	t.Helper()
	g, err := frontend.Build("m", m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := passes.Run(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var all []plan.Kernel
	for _, kn := range res.Kernels.Kernels {
		all = append(all, kernelOf(kn, kn.Name))
	}
	yes, _ := supported(t, all)
	return yes
}

func shareModels() []examples.Example {
	return append(examples.All(), examples.Example{Name: "gpt2small", Model: gpt.GPT2Small})
}

var (
	defineLine = regexp.MustCompile(`(?m)^define void @([\w$.]+)\(`)
	llComment  = regexp.MustCompile(`(?m)\s*;.*$`)
)

// The NVVM producer gives the launch plan codegen/ptx gives for the same kernels (the same entry
// for each kernel, the same configuration and parameters), and its module holds each distinct
// kernel once: no two functions of any example's module, or of GPT-2 small's, are the same up to
// their names.
func TestModuleEntriesAreDistinct(t *testing.T) {
	for _, m := range shareModels() {
		t.Run(m.Name, func(t *testing.T) {
			kernels := modelKernels(t, m.Model)
			if len(kernels) == 0 {
				t.Fatal("the NVVM producer takes none of its kernels (every template has an NVVM counterpart)")
			}
			ll, launches, err := IR(kernels, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			text, want, err := ptx.Module(kernels, plan.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			gemv := map[string]bool{} // codegen/ptx's GEMV entries
			for _, e := range strings.Split(text, ".visible .entry ")[1:] {
				if strings.Contains(e[:strings.Index(e, "ret;")+1], "// gemv: ") {
					gemv[e[:strings.IndexByte(e, '(')]] = true
				}
			}
			for i := range kernels {
				if gemv[want[i].Entry] {
					continue // no NVVM counterpart: its direct template launches differently (docs/codegen.md)
				}
				g, w := launches[i], want[i]
				g.Notes, w.Notes = nil, nil
				if gs, ws := fmt.Sprintf("%+v", g), fmt.Sprintf("%+v", w); gs != ws {
					t.Errorf("%s: launch\n got %s\nwant %s (codegen/ptx's)", kernels[i].Name, gs, ws)
				}
			}
			bodies := map[string]string{}
			pieces := defineLine.Split(ll, -1)[1:]
			names := defineLine.FindAllStringSubmatch(ll, -1)
			for i, body := range pieces {
				name := names[i][1]
				body = strings.ReplaceAll(llComment.ReplaceAllString(body, ""), name, "K")
				// Persistent kernels are not shared by design (plan.ShareKey).
				if prev, ok := bodies[body]; ok && !(strings.HasSuffix(prev, "_persistent") && strings.HasSuffix(name, "_persistent")) {
					t.Errorf("%s and %s have the same body", prev, name)
				}
				bodies[body] = name
			}
			distinct := map[string]bool{}
			for _, l := range launches {
				distinct[l.Entry] = true
			}
			if len(names) != len(distinct) {
				t.Errorf("the module has %d functions; the launches run %d", len(names), len(distinct))
			}
			t.Logf("%d kernels, %d functions", len(kernels), len(names))
		})
	}
}

// The PTX of a module compiled in parallel programs is byte-identical from run to run and
// whatever the number of threads, and every entry the launches name is in it once.
func TestParallelCompileIsDeterministic(t *testing.T) {
	p := requireProducer(t)
	var kernels []plan.Kernel
	for seed := 0; len(kernels) < 3*programKernels; seed++ {
		yes, _ := supported(t, randomKernels(t, seed))
		kernels = append(kernels, yes...)
	}
	if len(kernels) <= programKernels {
		t.Fatalf("%d kernels: too few for two programs", len(kernels))
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var first string
	for i, procs := range []int{1, 4, 4} {
		runtime.GOMAXPROCS(procs)
		text, launches, err := p.Module(kernels, plan.Target{SM: 80})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = text
			assemble(t, text, kernels)
			for _, l := range launches {
				if n := strings.Count(text, ".visible .entry "+l.Entry+"("); n != 1 {
					t.Errorf("entry %s appears %d times", l.Entry, n)
				}
			}
			continue
		}
		if text != first {
			t.Errorf("GOMAXPROCS=%d: the PTX differs from the first run's", procs)
		}
	}
}

// Kernels in different programs that call the same libdevice functions (f64 sin and cos keep
// a slow path as a .func and tables as globals) merge into one module that ptxas assembles and
// the simulator runs, each helper once.
func TestMergedProgramsShareLibdevice(t *testing.T) {
	p := requireProducer(t)
	var kernels []plan.Kernel
	for i, n := range []int{7, 64, 100, 129, 256, 300} {
		op := []string{"sin", "cos"}[i%2]
		src := fmt.Sprintf("graph g {\n  input %%x : f64[%d]\n  %%0 = %s(%%x) : f64[%d]\n  output y = %%0\n}", n, op, n)
		g, err := ir.Parse("g.gir", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		kernels = append(kernels, plan.Kernel{Name: fmt.Sprintf("k%d_%s", i, op), Graph: g})
	}
	text, _, err := p.Module(kernels, plan.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(text, "__internal_trig_reduction_slowpathd(\n"); n != 1 {
		t.Errorf("the slow path is defined %d times", n)
	}
	checkModule(t, p, kernels, 7)
}
