package backend

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/examples"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/passes"
)

func exampleKernels(t *testing.T, name string) []ptx.Kernel {
	t.Helper()
	for _, m := range examples.All() {
		if m.Name != name {
			continue
		}
		g, err := frontend.Build(m.Name, m.Model)
		if err != nil {
			t.Fatal(err)
		}
		res, err := passes.Run(g, passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return kernelsOf(res)
	}
	t.Fatalf("no example %s", name)
	return nil
}

// kernelsOf are the codegen kernels of a pipeline's result, as the compiler builds them.
func kernelsOf(res *passes.Result) []ptx.Kernel {
	var ks []ptx.Kernel
	for _, kn := range res.Kernels.Kernels {
		k := ptx.Kernel{Name: kn.Name, Graph: kn.Body, Shared: kn.SharedOffsets(), SharedBytes: int(kn.SharedBytes)}
		for _, s := range kn.Stages {
			k.Stages = append(k.Stages, ptx.Kernel{Name: s.Name, Graph: s.Body})
		}
		ks = append(ks, k)
	}
	return ks
}

// --backend auto: every kernel's entry comes from one producer, recorded in its launch; a
// kernel the NVVM producer refuses is codegen/ptx's; one both take is NVVM's exactly when its
// entry, assembled by ptxas on its own module, keeps more warps resident per SM, or as many with
// at least 10% fewer SASS instructions; the module holds each chosen entry once, assembles, and
// is the same from run to run.
func TestAutoChoosesByCounters(t *testing.T) {
	lib := libnvvm.Require(t)
	ptxas.Require(t)
	models := []string{"transformer", "resnet"}
	if testing.Short() {
		models = models[:1]
	}
	for _, model := range models {
		t.Run(model, func(t *testing.T) {
			kernels := exampleKernels(t, model)
			a := &Auto{NVVM: &nvvm.Producer{LibPath: lib.Path}}
			text, launches, err := a.Module(kernels, ptx.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			emitText, emitL, err := ptx.Module(kernels, ptx.Target{SM: 80})
			if err != nil {
				t.Fatal(err)
			}
			res, err := ptxas.Assemble([]byte(text), "sm_80")
			if err != nil {
				t.Fatal(err)
			}
			emitCounters := measure(emitText, emitL, "sm_80")
			nvvmUsed := 0
			for i, k := range kernels {
				l, c := launches[i], a.Choices[i]
				if l.Producer != c.Producer || c.Kernel != k.Name {
					t.Errorf("%s: launch producer %q, choice %+v", k.Name, l.Producer, c)
				}
				if res.Kernel(l.Entry) == nil {
					t.Errorf("%s: entry %s is not in the module", k.Name, l.Entry)
				}
				if n := strings.Count(text, ".entry "+l.Entry+"("); n != 1 {
					t.Errorf("%s: entry %s appears %d times", k.Name, l.Entry, n)
				}
				_, _, irErr := nvvm.IR([]ptx.Kernel{k}, ptx.Target{SM: 80})
				if irErr != nil {
					if l.Producer != "ptx" {
						t.Errorf("%s: refused by nvvm but made by %s", k.Name, l.Producer)
					}
					continue
				}
				nvText, nvL, err := a.NVVM.Module([]ptx.Kernel{k}, ptx.Target{SM: 80})
				if err != nil {
					t.Fatal(err)
				}
				p := emitCounters[emitL[i].Entry]
				n := measure(nvText, nvL, "sm_80")[nvL[0].Entry]
				want := "ptx"
				if n.warps > p.warps || n.warps == p.warps && 10*n.sass <= 9*p.sass {
					want = "nvvm"
					nvvmUsed++
				}
				if l.Producer != want {
					t.Errorf("%s: made by %s, want %s (ptx %+v, nvvm %+v)", k.Name, l.Producer, want, p, n)
				}
			}
			again, _, err := a.Module(kernels, ptx.Target{SM: 80})
			if err != nil || again != text {
				t.Errorf("a second build differs (err %v)", err)
			}
			t.Logf("%d kernels, %d by nvvm", len(kernels), nvvmUsed)
		})
	}
}

// Without ptxas the static rule decides: NVVM for loop, transpose-tile and column-reduction
// kernels, codegen/ptx otherwise.
func TestAutoStaticRule(t *testing.T) {
	lib := libnvvm.Require(t)
	t.Setenv("GCOMP_PTXAS", "/nonexistent/ptxas")
	kernels := exampleKernels(t, "transformer")
	a := &Auto{NVVM: &nvvm.Producer{LibPath: lib.Path}}
	_, launches, err := a.Module(kernels, ptx.Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range kernels {
		want := "ptx"
		if _, _, err := nvvm.IR([]ptx.Kernel{k}, ptx.Target{SM: 80}); err == nil {
			tpl := ptx.Template(k)
			if tpl == "reduction" {
				if plan, err := ptx.ReducePlan(k); err == nil {
					tpl = plan.Kind
				}
			}
			if tpl == "loop" || tpl == "transpose tile" || tpl == "column" {
				want = "nvvm"
			}
		}
		if launches[i].Producer != want {
			t.Errorf("%s: %s (%s), want %s", k.Name, launches[i].Producer, a.Choices[i].Why, want)
		}
	}
}
