package backend

import (
	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/ptx"
)

// NVVM is the NVVM producer (--backend nvvm) with codegen/ptx's entries for the kernels whose
// templates it has no counterpart for (nvvm.Lacks) rather than a refused model: the two modules
// merge into one (nvvm.MergePTX), the launches stay in the kernels' order, and each borrowed
// launch says whose entry it runs (Producer "ptx" and a note). Both producers give every kernel
// the same name, parameters and launch, so one plan runs the merged module.
type NVVM struct{ *nvvm.Producer }

func (p NVVM) Module(kernels []ptx.Kernel, t ptx.Target) (string, []ptx.Launch, error) {
	var own, other []ptx.Kernel
	var ownAt, otherAt []int
	var notes []string
	for i, k := range kernels {
		if note, ok := nvvm.Lacks(k, t); ok {
			other, otherAt, notes = append(other, k), append(otherAt, i), append(notes, note)
		} else {
			own, ownAt = append(own, k), append(ownAt, i)
		}
	}
	if len(other) == 0 || p.IROnly {
		return p.Producer.Module(kernels, t) // IROnly: an IR module cannot hold codegen/ptx's entries
	}
	otherText, otherLaunches, err := ptx.Module(other, t)
	if err != nil {
		return "", nil, err
	}
	launches := make([]ptx.Launch, len(kernels))
	for j, i := range otherAt {
		l := otherLaunches[j]
		l.Producer, l.Notes = "ptx", append(l.Notes, notes[j])
		launches[i] = l
	}
	if len(own) == 0 {
		return otherText, launches, nil
	}
	ownText, ownLaunches, err := p.Producer.Module(own, t)
	if err != nil {
		return "", nil, err
	}
	for j, i := range ownAt {
		launches[i] = ownLaunches[j]
	}
	text, err := nvvm.MergePTX([]string{ownText, otherText}, nil)
	if err != nil {
		return "", nil, err
	}
	return text, launches, nil
}
