package passes

import "slices"

// The bindtime pass marks the kernels that depend on parameters alone (BatchNorm's
// rsqrt(running_var+eps)·weight, weight transposes, casts of weights): their results are the
// same on every run until the weights change, so the runtime runs them when weights are bound
// (and again when they change: a train step that updates its weights runs them every step), not
// on every run. The memory plan keeps their outputs alive across runs, and the cost report
// counts per-run kernels only. The pass runs before persist, which leaves marked kernels out of
// the persistent kernels it makes, so parameter-only stages never run per run inside one.
//
// When the parameters change on every run (Options.ParamsChangeEveryRun: a train step) the pass
// does nothing. Marking would gain no run and cost launches: the runtime would launch the marked
// kernels every step, before the others, and persist could no longer take them as stages of the
// per-run kernels that read their outputs (a weight's cast beside the matmul that reads it), while
// the memory plan kept their outputs alive over the whole schedule.

// bindTimePass marks every kernel whose reads are parameters or outputs of kernels it marked
// already, and which writes only intermediates, and moves the marked kernels, in order, to the
// front of the schedule: they read nothing a per-run kernel writes, so the order stays
// topological, and the per-run kernels left between them become consecutive (runs the persist
// pass can merge). Custom kernels stay per-run, and so do kernels that dequantize weights: the
// point of quantized weights is that the device holds and reads the integers (passes/quant.go).
func bindTimePass(st *State) error {
	if st.opt.ParamsChangeEveryRun {
		return nil
	}
	bound := map[*Buffer]bool{}
	var bind, run []*Kernel
	for _, k := range st.Kernels.Kernels {
		if k.Kind == Custom || computesDequantize(k) {
			run = append(run, k)
			continue
		}
		ok := true
		for _, b := range k.Reads {
			ok = ok && (b.Kind == ParamBuffer || bound[b])
		}
		for _, b := range k.Writes {
			ok = ok && b.Kind == TempBuffer
		}
		if !ok {
			run = append(run, k)
			continue
		}
		k.BindTime = true
		bind = append(bind, k)
		for _, b := range k.Writes {
			bound[b] = true
		}
	}
	if !slices.Equal(st.Kernels.Kernels, append(bind, run...)) {
		st.Kernels.Kernels = append(bind, run...)
		st.Kernels.renumber()
	}
	return nil
}

// bindTimeWritten reports whether b is the output of a bind-time kernel: it is written before
// the first run and read by every run, so it is live over the whole schedule and no kernel may
// write over it, in place or otherwise.
func bindTimeWritten(b *Buffer) bool { return b.Writer != nil && b.Writer.BindTime }
