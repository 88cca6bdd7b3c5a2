package nvvm

import (
	"github.com/gcomp/gcomp/codegen/ptx"
)

// borrowed reports whether k takes a template this package has no counterpart for, whose
// kernels Module takes from codegen/ptx rather than refuse the model: the tensor-core GEMM over
// a quantized weight. The launch records it (Producer "ptx" and a note); both producers share
// names, parameters and launches, so one plan runs the merged module.
func borrowed(k ptx.Kernel, t ptx.Target) bool {
	return ptx.Template(k) == "contraction" && ptx.QuantizedMMA(k)
}

// borrowedNote is the note on a launch whose entry codegen/ptx wrote.
func borrowedNote(k ptx.Kernel, t ptx.Target) string {
	template := ptx.Template(k)
	if template == "contraction" {
		template = "quantized tensor-core GEMM"
	}
	return "the NVVM producer has no " + template + " template yet: this entry is codegen/ptx's"
}

// Module lowers kernels to NVVM IR and compiles it with libNVVM (lower), except kernels of the
// borrowed templates, which codegen/ptx writes; the two modules merge into one, and the
// launches stay in the kernels' order.
func (p *Producer) Module(kernels []ptx.Kernel, t ptx.Target) (string, []ptx.Launch, error) {
	var own, other []ptx.Kernel
	var ownAt, otherAt []int
	for i, k := range kernels {
		if borrowed(k, t) {
			other, otherAt = append(other, k), append(otherAt, i)
		} else {
			own, ownAt = append(own, k), append(ownAt, i)
		}
	}
	if len(other) == 0 || p.IROnly {
		return p.lower(kernels, t) // IROnly: an IR module cannot hold codegen/ptx's entries
	}
	otherText, otherLaunches, err := ptx.Module(other, t)
	if err != nil {
		return "", nil, err
	}
	launches := make([]ptx.Launch, len(kernels))
	for j, i := range otherAt {
		l := otherLaunches[j]
		l.Producer, l.Notes = "ptx", append(l.Notes, borrowedNote(other[j], t))
		launches[i] = l
	}
	if len(own) == 0 {
		return otherText, launches, nil
	}
	ownText, ownLaunches, err := p.lower(own, t)
	if err != nil {
		return "", nil, err
	}
	for j, i := range ownAt {
		launches[i] = ownLaunches[j]
	}
	text, err := MergePTX([]string{ownText, otherText}, nil)
	if err != nil {
		return "", nil, err
	}
	return text, launches, nil
}
