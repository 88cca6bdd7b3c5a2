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
// producer takes, and each entry is measured: the simulator runs it on a sample of its launch
// (the plan's grid cut to sampleBlocks blocks; both producers share the plan, so it is the same
// work) and counts the warp instructions issued, which sees loops, unrolling and libdevice's
// calls where static SASS counts do not; ptxas (for the target) gives the registers and the
// warps an SM keeps resident. NVVM's entry is taken where its cost (choose) is at least 10%
// lower: codegen/ptx computes the op table's numerics exactly, so it keeps every tie. An entry
// the simulator cannot run (buffers beyond maxSimBytes) is judged by ptxas alone: more resident
// warps, or as many and at least 10% fewer SASS instructions; without ptxas the simulated warp
// instructions alone decide (and without either, codegen/ptx's). Kernels the NVVM producer refuses
// (templates without a counterpart) and every kernel when libNVVM is not installed (and none
// was named) are codegen/ptx's. Each launch records the producer of its entry
// (Launch.Producer) and the choice is deterministic: the same counters for the same module.
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
	// PTX and NVVM are the two entries' counters, when both producers wrote the kernel and
	// they were measured.
	PTX, NVVM *Counters
}

func (*Auto) Name() string { return "auto" }

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
		if gemvKernel(k, t) {
			a.Choices[i].Why = "GEMV: codegen/nvvm computes it with the direct template"
			continue
		}
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
	// With codegen/ptx's entries for the templates the NVVM producer lacks, as --backend nvvm.
	nvText, nvLaunches, err := NVVM{a.NVVM}.Module(taken, t)
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
	var emit, nv map[string]*Counters
	if !a.PreferNVVM {
		sub := make([]ptx.Launch, len(at))
		for j, i := range at {
			sub[j] = launches[i]
		}
		emit = measureModule(ptxText, taken, sub, arch, sampleBlocks, registersFirst)
		nv = measureModule(nvText, taken, nvLaunches, arch, sampleBlocks, registersFirst)
		// An entry not simulated on one side is judged by SASS counts: both sides need them
		// (measureModule counted them on the side that failed).
		for j, i := range at {
			p, n := emit[launches[i].Entry], nv[nvLaunches[j].Entry]
			if p.Simulated && n.Simulated {
				continue
			}
			if p.Assembled && p.SASS == 0 {
				addSASS(ptxText, arch, emit)
			}
			if n.Assembled && n.SASS == 0 {
				addSASS(nvText, arch, nv)
			}
			break
		}
	}
	useNVVM := map[string]bool{} // entry → NVVM's
	for j, i := range at {
		entry := launches[i].Entry
		pick, why := true, "nvvm preferred"
		if !a.PreferNVVM {
			p, n := emit[entry], nv[nvLaunches[j].Entry]
			g := launches[i].Grid
			pick, why = choose(p, n, arch, g[0]*g[1]*g[2] == 1)
			a.Choices[i].PTX, a.Choices[i].NVVM = p, n
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

// choose is Auto's rule for one kernel: whether NVVM's entry n replaces codegen/ptx's p, and
// why. Both simulated: the cost of each is its simulated warp instructions, divided by the share
// of half the SM's warp slots it keeps resident when it keeps fewer (below half, fewer warps
// hide less of the memory latency; above, more warps do not issue faster), and NVVM's entry
// wins at a cost at least 10% lower. A launch of one block (a persistent kernel) occupies one
// SM whatever its registers: its cost is its warp instructions alone. Without the simulator's
// counters ptxas's decide; without those either, codegen/ptx's entry stays.
func choose(p, n *Counters, arch string, oneBlock bool) (bool, string) {
	warps := "no ptxas"
	if p.Assembled && n.Assembled {
		warps = fmt.Sprintf("resident warps ptx %d / nvvm %d (%s)", p.Warps, n.Warps, arch)
		if p.SASS > 0 && n.SASS > 0 { // counted only where an entry was not simulated
			warps += fmt.Sprintf(", SASS instructions ptx %d / nvvm %d", p.SASS, n.SASS)
		}
	}
	if p.Simulated && n.Simulated && p.WarpInsts > 0 {
		cp, cn := cost(p, arch, oneBlock), cost(n, arch, oneBlock)
		why := fmt.Sprintf("simulated warp instructions ptx %d / nvvm %d on %d block(s), cost ptx %.0f / nvvm %.0f; %s",
			p.WarpInsts, n.WarpInsts, p.Grid[0]*p.Grid[1]*p.Grid[2], cp, cn, warps)
		return 10*cn <= 9*cp, why
	}
	why := "not simulated"
	for _, c := range []*Counters{p, n} {
		if c.SimErr != nil {
			why = "not simulated: " + c.SimErr.Error()
			break
		}
	}
	if !p.Assembled || !n.Assembled {
		return false, why + "; no ptxas"
	}
	pick := n.Warps > p.Warps || n.Warps == p.Warps && n.SASS > 0 && 10*n.SASS <= 9*p.SASS
	return pick, why + "; " + warps
}

// cost is an entry's simulated warp instructions over its occupancy factor (choose).
func cost(c *Counters, arch string, oneBlock bool) float64 {
	w := float64(c.WarpInsts)
	half := ptxas.MaxWarps(arch) / 2
	if oneBlock || !c.Assembled || c.Warps >= half || c.Warps <= 0 {
		return w
	}
	return w * float64(half) / float64(c.Warps)
}

// gemvKernel reports whether codegen/ptx runs k in its GEMV template (with a norm prologue or
// not), which codegen/nvvm has no counterpart of (it falls back to the direct template, whose
// launch differs, so a sample of blocks would not compare the same work): auto keeps
// codegen/ptx's.
func gemvKernel(k ptx.Kernel, t ptx.Target) bool {
	switch ptx.Template(k) {
	case "norm gemv":
		return true
	case "contraction":
	default:
		return false
	}
	c, err := ptx.ContractionPlan(k, t)
	return err == nil && c.Kind == "gemv"
}
