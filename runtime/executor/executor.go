package executor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Program is an artifact loaded onto a device: its module, arena, scratch
// area and one buffer per input, parameter and output.
type Program struct {
	dev     Device
	art     *artifact.Artifact
	plan    *artifact.Plan
	mod     Module
	arena   Ptr
	scratch Ptr
	errors  Ptr                           // the error area (indexcheck.go), 0 without one
	bufs    map[string]map[string]*buffer // kind (input, param, output) → name → buffer
	allocs  []Ptr
	mem     MemStats
	// feedback maps an output to the input or parameter it replaces after each run (a
	// train step's updated weights and optimizer state): those inputs stay on the device.
	feedback map[string]*buffer
	donate   map[string]bool        // feedback outputs whose buffer trades places with the input's
	resident map[string]bool        // inputs whose value lives on the device between runs
	linked   map[string]bool        // inputs that read another program's buffer (Link)
	onLaunch func(kernel int) error // OnLaunch
	onDevice map[string]bool        // outputs another program reads in place (Link): not copied back
	inPlace  map[string]string      // output buffer → the donated input whose buffer it is (plan's in_place_of)
	pf       prefetch               // double-buffered inputs (Prefetch)
	pending  *Result                // launched, not yet waited for
	graphs   bool                   // UseGraphs
	replays  map[string]Replay      // recorded runs, by their kernels' arguments
	buckets  map[string]bool        // the sets of sizes recorded (graphsizes.go)
	nBuckets int                    // SetGraphBuckets; 0: DefaultGraphBuckets
	bind     bindTime               // when the plan's bind-time kernels run (bindtime.go)
	sz       *sizes                 // the run's sizes, for a plan with dims (sizes.go)
	vars     *variants              // the plan's specializations, or nil (variants.go)
}

type buffer struct {
	name  string
	typ   ir.Type
	ptr   Ptr
	bound bool // parameters: weights were written
}

// MemStats is the device memory a program holds, by purpose.
type MemStats struct {
	ArenaBytes   int64 // intermediates, placed by the memory plan
	ScratchBytes int64 // kernels' zeroed scratch area
	ParamBytes   int64
	InputBytes   int64
	OutputBytes  int64
}

// Total is all device memory the program holds.
func (m MemStats) Total() int64 {
	return m.ArenaBytes + m.ScratchBytes + m.ParamBytes + m.InputBytes + m.OutputBytes
}

// KernelRun is what a device measured about one kernel launch.
type KernelRun struct {
	Name     string
	Grid     [3]int
	Block    [3]int
	Counters *Counters // nil when the device measures nothing
}

// Result is one run's outputs (by the model's output names) and per-kernel measurements in
// launch order.
type Result struct {
	Outputs map[string]*tensor.Tensor
	Kernels []KernelRun
	Graph   GraphUse // how UseGraphs launched the run (graphsizes.go); "" kernel by kernel
}

// Load loads an artifact onto dev: the module, then every buffer.
// Parameters must be bound with SetParams before Run.
func Load(dev Device, a *artifact.Artifact) (*Program, error) {
	if err := a.Plan.Validate(); err != nil {
		return nil, fmt.Errorf("launch plan: %v", err)
	}
	return load(dev, a, nil)
}

// load loads a onto dev; params, when not nil, are the parameter buffers of another program
// whose memory dev addresses (Share), used instead of allocating new ones.
func load(dev Device, a *artifact.Artifact, params map[string]*buffer) (*Program, error) {
	var mod Module
	var err error
	if b, ok := dev.(BinaryLoader); ok && len(a.Cubins) > 0 {
		mod, err = b.LoadBinaries(a.PTX, a.Cubins)
	} else {
		mod, err = dev.Load(a.PTX)
	}
	if err != nil {
		return nil, err
	}
	p := &Program{dev: dev, art: a, plan: a.Plan, mod: mod, bufs: map[string]map[string]*buffer{}}
	if err := p.loadVariants(); err != nil {
		mod.Close()
		return nil, err
	}
	p.pf.streams, _ = dev.(Streams)
	p.pf.pool.dev = p.pf.streams
	if err := p.allocate(params); err != nil {
		p.Close()
		return nil, err
	}
	if err := p.loadSizes(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Program) alloc(n int64, label string) (Ptr, error) {
	ptr, err := p.dev.Alloc(max(n, 1)) // a 0-byte tensor still needs a distinct address
	if err != nil {
		return 0, err
	}
	p.allocs = append(p.allocs, ptr)
	if l, ok := p.dev.(Labeler); ok {
		if err := l.Label(ptr, label); err != nil {
			return 0, err
		}
	}
	return ptr, nil
}

func (p *Program) allocate(params map[string]*buffer) error {
	var err error
	if p.arena, err = p.alloc(p.plan.ArenaBytes, "arena"); err != nil {
		return fmt.Errorf("allocating the %d-byte arena: %w", p.plan.ArenaBytes, err)
	}
	p.mem.ArenaBytes = p.plan.ArenaBytes
	if p.plan.ScratchBytes > 0 {
		if p.scratch, err = p.alloc(p.plan.ScratchBytes, "scratch"); err != nil {
			return fmt.Errorf("allocating the %d-byte scratch area: %w", p.plan.ScratchBytes, err)
		}
		// Kernels expect zeroed scratch and leave it zeroed.
		if err := p.dev.Zero(p.scratch, p.plan.ScratchBytes); err != nil {
			return err
		}
		p.mem.ScratchBytes = p.plan.ScratchBytes
	}
	if err := p.allocateErrors(); err != nil {
		return err
	}
	for _, set := range []struct {
		kind  string
		bufs  []artifact.IOBuffer
		bytes *int64
	}{
		{artifact.ArgInput, p.plan.Inputs, &p.mem.InputBytes},
		{artifact.ArgParam, p.plan.Params, &p.mem.ParamBytes},
		{artifact.ArgOutput, p.plan.Outputs, &p.mem.OutputBytes},
	} {
		p.bufs[set.kind] = map[string]*buffer{}
		for _, b := range set.bufs {
			if set.kind == artifact.ArgOutput && p.lookup(b.Name) != nil {
				continue // an output that is an input or parameter is read from there
			}
			if set.kind == artifact.ArgOutput && b.InPlaceOf != "" {
				if p.inPlace == nil {
					p.inPlace = map[string]string{}
				}
				p.inPlace[b.Name] = b.InPlaceOf // the input's buffer, whichever it is after Link
				continue
			}
			if p.bufs[set.kind][b.Name] != nil {
				continue // the same buffer named twice (an output listed twice)
			}
			if shared := params[b.Name]; set.kind == artifact.ArgParam && shared != nil {
				p.bufs[set.kind][b.Name] = shared // another program's: not allocated, not freed here
				continue
			}
			t, err := ir.ParseType(b.Type)
			if err != nil {
				return err
			}
			ptr, err := p.alloc(b.Size, set.kind+" "+b.Name)
			if err != nil {
				return fmt.Errorf("allocating %s %s (%d bytes): %w", set.kind, b.Name, b.Size, err)
			}
			p.bufs[set.kind][b.Name] = &buffer{name: b.Name, typ: t, ptr: ptr}
			*set.bytes += b.Size
		}
	}
	return nil
}

// relabel names b's memory anew on devices that label allocations (for their error messages),
// after buffers traded places.
func (p *Program) relabel(b *buffer) {
	l, ok := p.dev.(Labeler)
	if !ok {
		return
	}
	for _, kind := range []string{artifact.ArgInput, artifact.ArgParam, artifact.ArgOutput} {
		if p.bufs[kind][b.name] == b {
			l.Label(b.ptr, kind+" "+b.name)
		}
	}
}

// output returns the buffer of the plan's output buffer name: its own, the donated input's
// (in_place_of), or the input's or parameter's of that name.
func (p *Program) output(name string) *buffer {
	if b := p.bufs[artifact.ArgOutput][name]; b != nil {
		return b
	}
	if in := p.inPlace[name]; in != "" {
		return p.bufs[artifact.ArgInput][in]
	}
	return p.lookup(name)
}

// lookup finds an input or parameter buffer by name.
func (p *Program) lookup(name string) *buffer {
	if b := p.bufs[artifact.ArgInput][name]; b != nil {
		return b
	}
	return p.bufs[artifact.ArgParam][name]
}

// Memory reports the device memory the program holds.
func (p *Program) Memory() MemStats { return p.mem }

// Plan is the program's launch plan.
func (p *Program) Plan() *artifact.Plan { return p.plan }

// SetParams writes weights to the device. Every parameter of the plan must be
// given, with its exact type; unknown names are an error.
func (p *Program) SetParams(params map[string]*tensor.Tensor) error {
	return p.write(artifact.ArgParam, params, true)
}

func (p *Program) write(kind string, values map[string]*tensor.Tensor, bind bool) error {
	if err := p.check(kind, values); err != nil {
		return err
	}
	for name, t := range values {
		b := p.bufs[kind][name]
		if t == nil {
			continue // resident state: already on the device
		}
		if err := p.dev.Write(b.ptr, t.Bytes()); err != nil {
			return fmt.Errorf("copying %s %s to the device: %v", kind, name, err)
		}
		b.bound = bind
		p.bind.current = p.bind.current && kind != artifact.ArgParam
	}
	return nil
}

// check checks values against the buffers of kind: every one given (nil for resident state),
// none unknown, each of its buffer's type.
func (p *Program) check(kind string, values map[string]*tensor.Tensor) error {
	types := make(map[string]*ir.Type, len(values))
	for name, t := range values {
		types[name] = nil
		if t != nil {
			types[name] = &t.Type
		}
	}
	return p.checkTypes(kind, types)
}

// checkTypes is check on the values' types (nil for resident state).
func (p *Program) checkTypes(kind string, values map[string]*ir.Type) error {
	bufs := p.bufs[kind]
	var missing, unknown []string
	for name := range values {
		if bufs[name] == nil || kind == artifact.ArgInput && p.linked[name] {
			unknown = append(unknown, name)
		}
	}
	for name := range bufs {
		if p.linked[name] {
			continue
		}
		if v, ok := values[name]; !ok || (v == nil && !p.resident[name]) {
			missing = append(missing, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("the model has no %s named %s", kind, strings.Join(unknown, ", "))
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("no value for %s %s", kind, strings.Join(missing, ", "))
	}
	for name, t := range values {
		if want := p.runType(bufs[name]); t != nil && !t.Equal(want) {
			return fmt.Errorf("%s %s is %s, the model wants %s", kind, name, *t, want)
		}
	}
	return nil
}

// Run copies the inputs to the device, launches every kernel in plan order,
// waits, and copies the outputs back: Launch, then Wait. With inputs nil it
// runs on the inputs Prefetch uploaded.
func (p *Program) Run(inputs map[string]*tensor.Tensor) (*Result, error) {
	return p.RunContext(context.Background(), inputs)
}

// RunContext is Run under ctx: ctx is checked before every kernel launch, and a run it
// stops returns an error that names the kernel it stopped before and wraps ctx.Err().
func (p *Program) RunContext(ctx context.Context, inputs map[string]*tensor.Tensor) (*Result, error) {
	if err := p.LaunchContext(ctx, inputs); err != nil {
		return nil, err
	}
	return p.Wait()
}

// Launch starts a run: it copies the inputs to the device (or, with inputs
// nil after Prefetch, makes the run read the prefetched ones) and queues
// every kernel in plan order, without waiting for them. Wait finishes the
// run; in between, Prefetch may upload the next run's inputs, which then
// copy while this run computes.
func (p *Program) Launch(inputs map[string]*tensor.Tensor) error {
	return p.LaunchContext(context.Background(), inputs)
}

// LaunchContext is Launch under ctx, checked before every kernel is queued (and before a
// recorded graph is replayed). When ctx stops the launch, the kernels already queued are
// waited for, so the program is ready for the next run, and the error wraps ctx.Err().
func (p *Program) LaunchContext(ctx context.Context, inputs map[string]*tensor.Tensor) error {
	if p.pending != nil {
		return fmt.Errorf("the previous run was launched and not waited for")
	}
	for _, b := range p.bufs[artifact.ArgParam] {
		if !b.bound {
			return fmt.Errorf("parameter %s has no value (bind weights first)", b.name)
		}
	}
	staged := p.pf.staged
	switch {
	case staged != nil && inputs != nil:
		return fmt.Errorf("inputs were prefetched for this run: pass nil to run on them")
	case staged != nil:
		if err := p.useStaged(); err != nil {
			return err
		}
	default:
		if err := p.bindSizes(inputs); err != nil {
			return err
		}
		if err := p.writeInputs(inputs); err != nil {
			return err
		}
	}
	res := &Result{Outputs: map[string]*tensor.Tensor{}}
	if err := p.launchAll(ctx, res, staged); err != nil {
		return err
	}
	if err := p.markRead(); err != nil {
		return err
	}
	p.pending, p.pf.running = res, staged
	return nil
}

// launchAll queues every kernel of the plan, one by one or as a recorded graph, noting each in
// res. When ctx stops it, the kernels queued finish before it returns (drain).
func (p *Program) launchAll(ctx context.Context, res *Result, staged *Staged) error {
	args := make([][]Ptr, len(p.plan.Kernels))
	for j, k := range p.plan.Kernels {
		args[j] = make([]Ptr, len(k.Args))
		for i, a := range k.Args {
			if a.Kind == artifact.ArgSize {
				args[j][i] = Ptr(uint32(p.size(a))) // the low half of the word is the .u32
				continue
			}
			args[j][i] = p.address(a)
		}
	}
	if err := p.launchBindTime(args, res); err != nil {
		return err
	}
	launch := p.launchEach
	if p.graphs && p.onLaunch == nil { // with dims, one recording per set of sizes (graphsizes.go)
		launch = p.launchGraph
	}
	err := launch(ctx, args, res)
	if err != nil && ctx.Err() != nil {
		err = errors.Join(err, p.drain(staged))
	}
	return err
}

// launchEach launches the plan's kernels one by one with args, noting each in res (if not nil),
// and stops before the next kernel once ctx is done.
//
// A kernel the plan marks PDL is launched as a programmatic dependent launch, except the run's
// first: a PDL kernel may load parameters before waiting for the kernels in flight, which within
// a run never write them, but the run before may have (Feedback trades an output written by its
// kernels into a parameter's place), so each run starts once the one before has completed.
func (p *Program) launchEach(ctx context.Context, args [][]Ptr, res *Result) error {
	first := true
	for j, k := range p.plan.Kernels {
		if k.BindTime {
			continue // launchBindTime
		}
		if err := ctx.Err(); err != nil {
			return stopped(p.plan, j, err)
		}
		grid := p.grid(k)
		c, err := p.mod.Launch(k.Entry, LaunchConfig{Grid: grid, Block: k.Block, SharedBytes: k.SharedBytes, PDL: k.PDL && !first}, args[j])
		first = false
		if err != nil {
			return fmt.Errorf("kernel %s (grid %v, block %v): %w", k.Name, grid, k.Block, err)
		}
		if res != nil {
			res.Kernels = append(res.Kernels, KernelRun{Name: k.Name, Grid: grid, Block: k.Block, Counters: c})
		}
		if p.onLaunch != nil {
			if err := p.onLaunch(j); err != nil {
				return fmt.Errorf("after kernel %s: %w", k.Name, err)
			}
		}
	}
	return nil
}

// Wait waits for the launched run and returns its outputs.
func (p *Program) Wait() (*Result, error) {
	res := p.pending
	if res == nil {
		return nil, fmt.Errorf("no run was launched")
	}
	p.pending = nil
	if err := p.dev.Sync(); err != nil {
		return nil, err
	}
	// The run's uploads are done: their host memory may take the next batch.
	if s := p.pf.running; s != nil {
		p.pf.running = nil
		p.pf.pool.put(s.buf)
	}
	if err := p.checkIndices(); err != nil {
		return nil, err
	}
	for i, o := range p.plan.Outputs {
		b := p.output(o.Name)
		name := p.plan.OutputNames[i]
		if dst := p.feedback[name]; dst != nil {
			if dst == b {
				continue // the output was written in place of the input it feeds: nothing moves
			}
			if p.donate[name] {
				// The output's memory becomes the input's and the input's old memory, which
				// nothing reads any more, receives the output of the next run: no copy.
				dst.ptr, b.ptr = b.ptr, dst.ptr
				p.relabel(dst)
				p.relabel(b)
				continue
			}
			if err := p.copy(dst, b, o.Size); err != nil {
				return nil, fmt.Errorf("feeding output %s back into %s: %v", name, dst.name, err)
			}
			continue
		}
		if p.onDevice[name] {
			continue
		}
		typ := p.runType(b)
		t, err := p.readAs(b, typ, int64(typ.Bytes()))
		if err != nil {
			return nil, fmt.Errorf("copying output %s from the device: %v", name, err)
		}
		res.Outputs[name] = t
	}
	return res, nil
}

func (p *Program) read(b *buffer, size int64) (*tensor.Tensor, error) {
	return p.readAs(b, b.typ, size)
}

// readAs reads the first size bytes of b as a tensor of type typ.
func (p *Program) readAs(b *buffer, typ ir.Type, size int64) (*tensor.Tensor, error) {
	data := make([]byte, size)
	if size > 0 {
		if err := p.dev.Read(data, b.ptr); err != nil {
			return nil, err
		}
	}
	return tensor.FromBytes(typ, data)
}

func (p *Program) copy(dst, src *buffer, n int64) error {
	return CopyDevice(p.dev, dst.ptr, src.ptr, n)
}

// Feedback makes the program keep state on the device across runs, as a
// compiled train step needs: after every run, output out (by the model's
// output name) replaces the input or parameter bindings[out], and is not
// returned. Where the plan wrote the output in place of that very input
// (in_place_of) nothing moves at all; where the output has a buffer of its own
// the two buffers trade places (the input is donated to the next run's
// output), so state never moves; otherwise (an output that is an input, or one
// buffer behind two outputs) it is copied on the device. Inputs named here must be given to
// SetState once; after that Run does not take them.
func (p *Program) Feedback(bindings map[string]string) error {
	outs := map[string]artifact.IOBuffer{}
	users := map[string]int{} // output buffer → how many output names it holds
	for i, o := range p.plan.Outputs {
		outs[p.plan.OutputNames[i]] = o
		users[o.Name]++
	}
	fb, resident, donate := map[string]*buffer{}, map[string]bool{}, map[string]bool{}
	for out, name := range bindings {
		o, ok := outs[out]
		if !ok {
			return fmt.Errorf("feedback: the model has no output %s", out)
		}
		dst := p.lookup(name)
		if dst == nil {
			return fmt.Errorf("feedback: the model has no input or parameter %s (for output %s)", name, out)
		}
		if dst.typ.String() != o.Type {
			return fmt.Errorf("feedback: output %s is %s, %s is %s", out, o.Type, name, dst.typ)
		}
		fb[out] = dst
		if p.bufs[artifact.ArgInput][name] != nil {
			resident[name] = true
		}
		src := p.bufs[artifact.ArgOutput][o.Name]
		donate[out] = src != nil && src != dst && users[o.Name] == 1
	}
	p.feedback, p.resident, p.donate = fb, resident, donate
	p.bind.everyRun = p.feedsParams() || p.bind.shared
	return nil
}

// SetState writes the initial values of the inputs that Feedback keeps on the
// device.
func (p *Program) SetState(values map[string]*tensor.Tensor) error {
	for name := range p.resident {
		if values[name] == nil {
			return fmt.Errorf("no value for state input %s", name)
		}
	}
	for name, t := range values {
		b := p.bufs[artifact.ArgInput][name]
		if b == nil || !p.resident[name] {
			return fmt.Errorf("%s is not a state input of the model", name)
		}
		if !t.Type.Equal(b.typ) {
			return fmt.Errorf("state %s is %s, the model wants %s", name, t.Type, b.typ)
		}
		if err := p.dev.Write(b.ptr, t.Bytes()); err != nil {
			return err
		}
		b.bound = true
	}
	return nil
}

// Read copies a parameter's or input's current value from the device (the
// trained weights after steps with Feedback).
func (p *Program) Read(name string) (*tensor.Tensor, error) {
	b := p.lookup(name)
	if b == nil {
		return nil, fmt.Errorf("the model has no input or parameter %s", name)
	}
	return p.read(b, int64(b.typ.Bytes()))
}

// writeInputs writes the inputs of one run: every input but the resident ones.
func (p *Program) writeInputs(values map[string]*tensor.Tensor) error {
	all, err := p.runInputs(values)
	if err != nil {
		return err
	}
	return p.write(artifact.ArgInput, all, false)
}

// runInputs checks that values are a run's inputs (none of them resident state, which must be
// set) and returns them with nil for each resident input, as write and check take them.
func (p *Program) runInputs(values map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	for name := range p.resident {
		if values[name] != nil {
			return nil, fmt.Errorf("input %s is state kept on the device; do not pass it to Run", name)
		}
		if !p.bufs[artifact.ArgInput][name].bound {
			return nil, fmt.Errorf("state input %s has no value (SetState first)", name)
		}
	}
	if len(p.resident) == 0 {
		return values, nil
	}
	all := map[string]*tensor.Tensor{}
	for k, v := range values {
		all[k] = v
	}
	for name := range p.resident {
		if !p.linked[name] { // a linked input is not given at all: it reads another program's buffer
			all[name] = nil
		}
	}
	return all, nil
}

func (p *Program) address(a artifact.Arg) Ptr {
	switch a.Kind {
	case artifact.ArgArena:
		return p.arena + Ptr(a.Offset)
	case artifact.ArgScratch:
		return p.scratch + Ptr(a.Offset)
	case artifact.ArgError:
		return p.errors + Ptr(a.Offset)
	case artifact.ArgScalar:
		bits, _ := a.ScalarBits() // the plan was validated
		return Ptr(bits)
	case artifact.ArgOutput:
		return p.output(a.Name).ptr
	}
	return p.lookup(a.Name).ptr
}

// Close frees the program's device memory and prefetch host memory and unloads its module.
// Nothing may use the program, or memory Stage returned, after Close.
func (p *Program) Close() error {
	var errs []error
	errs = append(errs, p.closeReplays())
	for _, ptr := range p.allocs {
		errs = append(errs, p.dev.Free(ptr))
	}
	p.allocs = nil
	if p.mod != nil {
		errs = append(errs, p.mod.Close())
		p.mod = nil
	}
	// Last: freeing device memory waited for the uploads from the host memory.
	errs = append(errs, p.closePrefetch())
	return errors.Join(errs...)
}
