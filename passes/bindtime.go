package passes

// The bindtime pass marks the kernels that depend on parameters alone (BatchNorm's
// rsqrt(running_var+eps)·weight, weight transposes, casts of weights): their results are the
// same on every run until the weights change, so the runtime runs them when weights are bound
// (and again when they change: a train step that updates its weights runs them every step), not
// on every run. The memory plan keeps their outputs alive across runs, and the cost report
// counts per-run kernels only.

// bindTimePass marks the parameter-only kernels (paramOnly).
func bindTimePass(st *State) error {
	for k := range paramOnly(st.Kernels.Kernels) {
		k.BindTime = true
	}
	return nil
}

// paramOnly returns the kernels of ks (in schedule order) whose reads are parameters or outputs
// of kernels it returns already, and which write only intermediates. Custom and persistent
// kernels are never among them: they run every run.
func paramOnly(ks []*Kernel) map[*Kernel]bool {
	only := map[*Kernel]bool{}
	bound := map[*Buffer]bool{}
	for _, k := range ks {
		if k.Kind == Custom || k.Kind == Persistent {
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
			continue
		}
		only[k] = true
		for _, b := range k.Writes {
			bound[b] = true
		}
	}
	return only
}

// bindTimeWritten reports whether b is the output of a bind-time kernel: it is written before
// the first run and read by every run, so it is live over the whole schedule and no kernel may
// write over it, in place or otherwise.
func bindTimeWritten(b *Buffer) bool { return b.Writer != nil && b.Writer.BindTime }
