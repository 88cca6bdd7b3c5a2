package backend

import (
	"errors"
	"fmt"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/internal/ptxas"
)

// Auto chooses the producer kernel by kernel (--backend auto). Both write every kernel the NVVM
// producer takes; ptxas assembles both modules for the target and the entry that keeps more
// warps resident per SM (registers, shared memory, block size) wins, and at equal occupancy
// NVVM's only where its SASS has at least 10% fewer instructions (cuobjdump -sass): codegen/ptx
// computes the op table's numerics exactly, so it keeps every tie. Without ptxas the static rule
// takes NVVM's for the templates where docs/perf.md measured it issuing more than 10% fewer warp
// instructions with as many or fewer resident warps (loop, transpose tile, column reduction),
// codegen/ptx's elsewhere. Kernels the NVVM producer refuses (templates without a counterpart)
// and every kernel when libNVVM is not installed (and none was named) are codegen/ptx's. Each launch records the
// producer of its entry (Launch.Producer) and the choice is deterministic: the same counters
// for the same module.
type Auto struct {
	NVVM *nvvm.Producer
	// PreferNVVM takes NVVM's entry for every kernel it has a template for, without counters
	// (make demo's nvvm column: the NVVM producer wherever it can, codegen/ptx elsewhere).
	PreferNVVM bool
	// Choices are the last Module's decisions, one per kernel, in order.
	Choices []Choice
}

// Choice is why one kernel's entry came from its producer.
type Choice struct {
	Kernel, Producer, Why string
}

func (*Auto) Name() string { return "auto" }

// counters are one entry's ptxas figures.
type counters struct {
	warps, sass int
}

func (a *Auto) Module(kernels []ptx.Kernel, t ptx.Target) (string, []ptx.Launch, error) {
	ptxText, launches, err := ptx.Module(kernels, t)
	if err != nil {
		return "", nil, err
	}
	a.Choices = make([]Choice, len(kernels))
	var taken []ptx.Kernel
	var at []int
	for i, k := range kernels {
		a.Choices[i] = Choice{Kernel: k.Name, Producer: "ptx"}
		_, _, err := nvvm.IR([]ptx.Kernel{k}, t)
		switch {
		case err == nil:
			taken = append(taken, k)
			at = append(at, i)
		case nvvm.Refused(err):
			a.Choices[i].Why = err.Error()
		default:
			return "", nil, err
		}
	}
	for i := range launches {
		launches[i].Producer = "ptx"
	}
	if len(taken) == 0 {
		return ptxText, launches, nil
	}
	nvText, nvLaunches, err := a.NVVM.Module(taken, t)
	if errors.Is(err, libnvvm.ErrNoLibrary) && a.NVVM.LibPath == "" { // a library named is one to load
		for _, i := range at {
			a.Choices[i].Why = "libNVVM is not installed"
		}
		return ptxText, launches, nil
	}
	if err != nil {
		return "", nil, err
	}
	arch := fmt.Sprintf("sm_%d", t.SM)
	rule := "prefer"
	var emit, nv map[string]counters
	if !a.PreferNVVM {
		rule = "ptxas"
		if emit, nv = measure(ptxText, launches, arch), measure(nvText, nvLaunches, arch); emit == nil || nv == nil {
			rule = "static"
		}
	}
	useNVVM := map[string]bool{} // entry → NVVM's
	for j, i := range at {
		entry := launches[i].Entry
		var why string
		var pick bool
		if rule == "prefer" {
			pick, why = true, "nvvm preferred"
		} else if rule == "static" {
			tpl := ptx.Template(kernels[i])
			if tpl == "reduction" {
				if plan, err := ptx.ReducePlan(kernels[i]); err == nil {
					tpl = plan.Kind + " reduction"
				}
			}
			pick = tpl == "loop" || tpl == "transpose tile" || tpl == "column reduction"
			why = fmt.Sprintf("static rule, no ptxas: %s template", tpl)
		} else {
			p, n := emit[entry], nv[nvLaunches[j].Entry]
			pick = n.warps > p.warps || n.warps == p.warps && n.sass > 0 && 10*n.sass <= 9*p.sass
			why = fmt.Sprintf("ptxas %s: resident warps ptx %d / nvvm %d, SASS instructions ptx %d / nvvm %d", arch, p.warps, n.warps, p.sass, n.sass)
		}
		a.Choices[i].Why = why
		if pick {
			a.Choices[i].Producer = "nvvm"
			useNVVM[entry] = true
			launches[i] = nvLaunches[j]
			launches[i].Producer = "nvvm"
		}
	}
	if len(useNVVM) == 0 {
		return ptxText, launches, nil
	}
	text, err := mergeChosen(ptxText, nvText, useNVVM)
	return text, launches, err
}

// mergeChosen is codegen/ptx's module without the entries NVVM's replaces, then NVVM's with only
// those.
func mergeChosen(ptxText, nvText string, useNVVM map[string]bool) (string, error) {
	emit, err := nvvm.MergePTX([]string{ptxText}, func(e string) bool { return !useNVVM[e] })
	if err != nil {
		return "", err
	}
	nv, err := nvvm.MergePTX([]string{nvText}, func(e string) bool { return useNVVM[e] })
	if err != nil {
		return "", err
	}
	return nvvm.MergePTX([]string{emit, nv}, nil)
}

// measure assembles text for arch and returns each entry's counters, or nil without ptxas.
func measure(text string, launches []ptx.Launch, arch string) map[string]counters {
	res, cubin, err := ptxas.AssembleCubin([]byte(text), arch)
	if err != nil {
		return nil
	}
	sass, err := ptxas.SASS(cubin)
	if err != nil {
		sass = nil // occupancy alone decides
	}
	out := map[string]counters{}
	for _, l := range launches {
		k := res.Kernel(l.Entry)
		if k == nil {
			continue
		}
		out[l.Entry] = counters{
			warps: ptxas.ResidentWarps(arch, k.Registers, k.SharedBytes+l.SharedBytes, l.Block[0]*l.Block[1]*l.Block[2]),
			sass:  sass[l.Entry],
		}
	}
	return out
}
