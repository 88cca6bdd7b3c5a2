package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// renderCalls rewrites the fake driver's call log in the terms of the ordering contract: streams
// by role, events by record (rN is the Nth record; a wait names the record it captured), input
// buffers by the order the uploads first reach them (A, B), launches by the input buffer they
// read; repeated lines are one.
func renderCalls(calls []string, launches []fakeLaunch, compute, copier Stream, inputs map[uint64]bool) string {
	stream := map[string]string{fmt.Sprintf("%x", compute): "compute", fmt.Sprintf("%x", copier): "copy"}
	records, latest := 0, map[string]string{}
	bufs := map[string]string{}
	name := func(p string) string {
		if bufs[p] == "" {
			bufs[p] = string(rune('A' + len(bufs)))
		}
		return bufs[p]
	}
	var out []string
	l := 0
	for _, c := range calls {
		f := strings.Fields(c)
		kv := map[string]string{}
		for _, x := range f[1:] {
			k, v, _ := strings.Cut(x, "=")
			kv[k] = v
		}
		var line string
		switch f[0] {
		case "record":
			records++
			latest[kv["e"]] = fmt.Sprintf("r%d", records)
			line = fmt.Sprintf("record %s on %s", latest[kv["e"]], stream[kv["s"]])
		case "wait":
			line = fmt.Sprintf("%s waits for %s", stream[kv["s"]], latest[kv["e"]])
		case "htod":
			line = fmt.Sprintf("%s: copy to %s", stream[kv["s"]], name(kv["dst"]))
		case "launch":
			line = "launch"
			for _, p := range launches[l].params {
				if inputs[p] {
					line += " reading " + name(fmt.Sprintf("%x", p))
				}
			}
			l++
		case "sync":
			line = "sync"
		case "dtoh":
			line = "read"
		}
		if len(out) == 0 || out[len(out)-1] != line {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// prefetchedSteps compiles model (one input x) for the fake driver, loads it on d with seeded
// parameters (with CUDA graphs if graphs) and runs 3 steps as training does: prefetch batch 0,
// then launch step i, prefetch batch i+1, wait. It logs the driver calls of the steps and returns
// the program and the staging bytes before them.
func prefetchedSteps(t *testing.T, f *fakeDriver, d *Device, graphs bool, model func(*frontend.Builder)) (*executor.Program, int64) {
	t.Helper()
	g, err := frontend.Build("m", model)
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range res.Artifact.Plan.Kernels {
		f.kernels[k.Entry] = func(*fakeDriver, []uint64) (Result, Result) { return Success, Success }
	}
	prog, err := executor.Load(d, res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	_, params, err := tensor.SeededValues(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := prog.SetParams(params); err != nil {
		t.Fatal(err)
	}
	if !prog.UseGraphs(graphs) {
		t.Fatal("the CUDA device does not record graphs")
	}
	var staged []*executor.Staged
	for i := range 4 {
		s, err := prog.Stage(map[string]*tensor.Tensor{"x": tensor.RandomInput(g.Lookup("x"), uint64(i))})
		if err != nil {
			t.Fatal(err)
		}
		staged = append(staged, s)
	}
	f.logging, f.launches = true, nil
	stagingBefore := d.staging.pinned
	if err := prog.Prefetch(staged[0]); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := prog.Launch(nil); err != nil {
			t.Fatal(err)
		}
		if err := prog.Prefetch(staged[i+1]); err != nil {
			t.Fatal(err)
		}
		if _, err := prog.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	f.logging = false
	return prog, stagingBefore
}

// The ordering contract of prefetched runs, as the driver sees it: batch i+1 is copied on the
// copy stream, from pinned memory in place, before step i is synchronized; the compute stream
// waits for that copy's record before step i+1's launches, which read the buffer it filled; a
// copy into the buffer step i read waits for the record after step i's launches.
func TestPrefetchOrdering(t *testing.T) {
	f := newFake()
	d := openFake(t, f, Options{})
	// One input to prefetch.
	prog, stagingBefore := prefetchedSteps(t, f, d, false, func(b *frontend.Builder) {
		b.Output("y", nn.NewLinear(b, "fc", 8, 2).Forward(b.Input("x", ir.F32, 4, 8)))
	})
	inputs := map[uint64]bool{}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "htod s="+fmt.Sprintf("%x", d.copier)) {
			dst, _ := strings.CutPrefix(strings.Fields(c)[2], "dst=")
			var p uint64
			fmt.Sscanf(dst, "%x", &p)
			inputs[p] = true
		}
	}
	got := renderCalls(f.calls, f.launches, d.stream, d.copier, inputs)
	want := `copy: copy to A
record r1 on copy
compute waits for r1
launch reading A
record r2 on compute
copy: copy to B
record r3 on copy
sync
read
sync
compute waits for r3
launch reading B
record r4 on compute
copy waits for r2
copy: copy to A
record r5 on copy
sync
read
sync
compute waits for r5
launch reading A
record r6 on compute
copy waits for r4
copy: copy to B
record r7 on copy
sync
read
sync`
	if got != want {
		t.Errorf("driver calls:\n%s\n\nwant:\n%s", got, want)
	}
	// Every upload copied from AllocHost's memory: none went through a staging buffer.
	if d.staging.pinned != stagingBefore {
		t.Errorf("uploads were staged: %d staging bytes, %d before", d.staging.pinned, stagingBefore)
	}
	if len(d.host) != 4 {
		t.Errorf("%d pinned buffers, want the 4 staged batches'", len(d.host))
	}
	if err := prog.Close(); err != nil {
		t.Fatal(err)
	}
	if len(d.host) != 0 || len(d.events) != 0 {
		t.Errorf("after Close the device holds %d pinned buffers and %d events", len(d.host), len(d.events))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if f.events != 0 || f.streams != 0 || len(f.host) != 0 {
		t.Errorf("after Close: %d events, %d streams, %d pinned buffers left", f.events, f.streams, len(f.host))
	}
}
