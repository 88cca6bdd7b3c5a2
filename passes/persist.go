package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/ops"
)

// Persistent kernels (docs/fusion.md, "Persistent kernels"). The persist pass replaces a run of
// consecutive kernels of the schedule by one kernel that a single block executes: the stages run
// in order, separated by a barrier, and the values one stage passes to later ones stay in shared
// memory. A run of small dependent kernels (the time steps of a recurrent layer) then reads each
// input and weight once and writes only what leaves it, instead of paying a launch and a DRAM
// round trip per step. The price is parallelism (one SM does all the work), so the run is
// bounded by FusionOptions: every stage's iteration space, the run's flops, its shared memory
// and the buffers it reads. Schedule order is a topological order, so a contiguous run can never
// close a cycle: everything it reads from outside is written before its first kernel, and
// everything outside that reads it runs after its last.

// sharedAlign aligns every shared-memory slot (the widest access of a stage is 16 bytes).
const sharedAlign = 16

// SharedSlot is a value a persistent kernel keeps in shared memory between its stages.
type SharedSlot struct {
	// Buffer is a SharedBuffer when nothing outside the kernel reads it, else a temp or output
	// buffer that the kernel also writes to global memory.
	Buffer   *Buffer
	Offset   int64 // bytes from the start of the kernel's shared memory, a multiple of sharedAlign
	From, To int   // the stage that writes it and the last stage that reads it
}

// SharedOffsets maps each value a persistent kernel keeps in shared memory to its byte offset
// (nil for other kernels): what codegen needs to know of the slots.
func (k *Kernel) SharedOffsets() map[string]int {
	if len(k.Shared) == 0 {
		return nil
	}
	m := map[string]int{}
	for _, s := range k.Shared {
		m[s.Buffer.Name] = int(s.Offset)
	}
	return m
}

func persistPass(st *State) error {
	kg := st.Kernels
	opt := kg.Bounds.withDefaults()
	if opt.PersistRuns != nil {
		return persistRuns(kg, *opt.PersistRuns, opt)
	}
	if opt.PersistStages < 2 {
		return nil // disabled by the options
	}
	readers := map[*Buffer][]int{}
	for i, k := range kg.Kernels {
		for _, b := range k.Reads {
			readers[b] = append(readers[b], i)
		}
	}
	var out []*Kernel
	for i := 0; i < len(kg.Kernels); {
		n, p := longestRun(kg.Kernels, i, readers, opt)
		if n >= opt.PersistStages {
			if k := persistIfFaster(kg.Kernels[i:i+n], p, st.opt.TF32); k != nil {
				kg.PersistRuns = append(kg.PersistRuns, runOf(k, i))
				out = append(out, k)
				i += n
				continue
			}
		}
		out = append(out, kg.Kernels[i])
		i++
	}
	kg.Kernels = out
	kg.renumber()
	return nil
}

// persistIfFaster returns the persistent kernel for run if the cost model (cost.go) rates it
// faster than the run's kernels, each launched on a stream: one launch instead of len(run), but
// one block, so one SM's share of the machine. Otherwise it returns nil and leaves the run's
// buffers as they were.
func persistIfFaster(run []*Kernel, p *runPlan, tf32 bool) *Kernel {
	separate := launchesUS(len(run), false)
	type was struct {
		b      *Buffer
		writer *Kernel
		kind   BufferKind
	}
	var undo []was
	for _, k := range run {
		separate += kernelCost(k, tf32).ModeledTimeUS
		for _, b := range k.Writes {
			undo = append(undo, was{b, b.Writer, b.Kind})
		}
	}
	k := persistent(run, p)
	if kernelCost(k, tf32).ModeledTimeUS+launchesUS(1, false) < separate {
		return k
	}
	for _, u := range undo {
		u.b.Writer, u.b.Kind = u.writer, u.kind
	}
	return nil
}

// runPlan is where a run's values live.
type runPlan struct {
	slots       []SharedSlot
	global      map[*Buffer]bool // written buffers that something outside the run reads
	sharedBytes int64
}

// persistable reports whether a kernel can be a stage: a loop or contraction kernel whose
// iteration space one block covers in a few strides. A contraction whose epilogue pools is not:
// its pooling needs the tiled template's window-major rows, and stages run the direct fold; nor
// is a GEMV with a norm prologue (normgemv.go): stages run no reductions.
func persistable(k *Kernel, opt FusionOptions) bool {
	return (k.Kind == Loop || k.Kind == Contraction) && kernelPool(k) == nil && !hasReduction(k) && !contractsSymbolic(k) && !freesSymbolicRHS(k) && !concatsSymbolic(k) && k.Space.NumElements() <= opt.PersistElems
}

// concatsSymbolic reports whether k concatenates along a symbolic dim (a cache grown by
// concatenation): such a kernel runs at symbolic sizes on its own, as a copy (codegen/ptx's
// symconcat.go), but not as a persistent kernel's stage.
func concatsSymbolic(k *Kernel) bool {
	for _, v := range k.Body.Values {
		if v.Op != "concat" {
			continue
		}
		if s, ax := symOf(k, v), v.Attrs.Int("axis", 0); ax < len(s) {
			if _, ok := s[ax].IsConst(); !ok {
				return true
			}
		}
	}
	return false
}

// symOf is v's symbolic sizes, or those of the value it stands for in k's source graph.
func symOf(k *Kernel, v *ir.Value) []sym.Expr {
	if v.Type.Sym == nil && k.Origins[v] != nil {
		return k.Origins[v].Type.Sym
	}
	return v.Type.Sym
}

// contractsSymbolic reports whether a product of k contracts a symbolic dim (a train step's
// weight gradient over a symbolic batch): such a kernel runs at symbolic sizes on its own
// (codegen/ptx's symfold.go), but not as a persistent kernel's stage, whose products run the
// bound's K.
func contractsSymbolic(k *Kernel) bool {
	for _, v := range k.Body.Values {
		if v.Op != "dot_general" || len(v.Args) < 2 {
			continue
		}
		for i, key := range []string{"lhs_contract", "rhs_contract"} {
			s := symOf(k, v.Args[i])
			for _, ax := range v.Attrs.Ints(key) {
				if ax < len(s) {
					if _, ok := s[ax].IsConst(); !ok {
						return true
					}
				}
			}
		}
	}
	return false
}

// hasReduction reports whether k's body reduces.
func hasReduction(k *Kernel) bool {
	for _, v := range k.Body.Values {
		if ops.ClassOf(v.Op) == ops.Reduce {
			return true
		}
	}
	return false
}

// longestRun returns how many kernels from start form the longest run that fits the bounds,
// without trailing kernels that read nothing the run computes (they would gain nothing), and
// its plan.
func longestRun(ks []*Kernel, start int, readers map[*Buffer][]int, opt FusionOptions) (int, *runPlan) {
	var best *runPlan
	n := 0
	var work int64
	// A run is all bind-time kernels or all per-run ones: a bind-time stage inside a per-run
	// kernel would run every run, and a per-run one inside a bind-time kernel only at bind.
	for j := start; j < len(ks) && persistable(ks[j], opt) && ks[j].BindTime == ks[start].BindTime; j++ {
		for _, v := range ks[j].Body.Values {
			work += flops(v)
		}
		if work > opt.PersistFlops {
			break
		}
		p := planRun(ks[start:j+1], start, readers, opt)
		if p == nil {
			break
		}
		if j > start && (readsFrom(ks[j], ks[start:j]) || readsSame(ks[j], ks[start:j])) {
			n, best = j-start+1, p
		}
	}
	return n, best
}

// readsSame reports whether k reads a buffer the run's first kernel reads, other than a
// parameter: a sibling of the run (Llama's value projection beside the query and key ones, all
// reading the normalized activations), which as a stage saves its launch.
func readsSame(k *Kernel, run []*Kernel) bool {
	for _, b := range k.Reads {
		if b.Kind != ParamBuffer && slices.Contains(run[0].Reads, b) {
			return true
		}
	}
	return false
}

// readsFrom reports whether k reads a buffer one of run writes.
func readsFrom(k *Kernel, run []*Kernel) bool {
	for _, b := range k.Reads {
		if b.Writer != nil && slices.Contains(run, b.Writer) {
			return true
		}
	}
	return false
}

// planRun decides which written buffers go to global memory (read after the run, or outputs)
// and places the ones later stages read in shared memory: two slots share bytes only if no
// stage sees both. It returns nil when the run reads more than MaxReads
// buffers or needs more than PersistShared bytes.
func planRun(run []*Kernel, start int, readers map[*Buffer][]int, opt FusionOptions) *runPlan {
	p := &runPlan{global: map[*Buffer]bool{}}
	stage := map[*Kernel]int{}
	for i, k := range run {
		stage[k] = i
	}
	external := map[*Buffer]bool{}
	for i, k := range run {
		for _, b := range k.Reads {
			if s, ok := stage[b.Writer]; !ok || b.Writer == nil {
				external[b] = true
			} else if s >= i {
				return nil // not in schedule order: CheckKernels would have failed
			}
		}
		for _, b := range k.Writes {
			last := i
			for _, r := range readers[b] {
				if r-start >= len(run) {
					p.global[b] = true
				} else {
					last = max(last, r-start)
				}
			}
			if b.Kind == OutputBuffer {
				p.global[b] = true
			}
			if last > i {
				p.slots = append(p.slots, SharedSlot{Buffer: b, From: i, To: last})
			}
		}
	}
	if len(external) > opt.MaxReads {
		return nil
	}
	// Placed as the memory plan places the arena (greedy by size, best fit), at sharedAlign.
	units := make([]*unit, len(p.slots))
	for i, sl := range p.slots {
		n := sl.Buffer.Bytes()
		units[i] = &unit{bufs: []*Buffer{sl.Buffer}, size: alignTo(n, sharedAlign), bytes: n, from: sl.From, to: sl.To}
	}
	p.sharedBytes = placeBestFit(units, orderBySize(units))
	for i, u := range units {
		p.slots[i].Offset = u.offset
	}
	if p.sharedBytes > int64(opt.PersistShared) {
		return nil
	}
	return p
}

// persistent builds the kernel that runs the stages of run under plan p. Buffers no kernel
// outside reads become SharedBuffers; the kernel's body is the stages' bodies in order, so the
// reference interpreter and the cost report see one graph.
func persistent(run []*Kernel, p *runPlan) *Kernel {
	k := &Kernel{Kind: Persistent, Stages: run, Shared: p.slots, SharedBytes: p.sharedBytes, label: "persistent", BindTime: run[0].BindTime}
	body := ir.NewGraph("kernel")
	val := map[*Buffer]*ir.Value{}
	for i, s := range run {
		s.Name = fmt.Sprintf("s%d_%s", i, s.label)
		s.Body.Name = s.Name
		m := copyBody(body, s, val, map[*ir.Value]*ir.Value{}, &k.Reads)
		for j, o := range s.Body.Outputs {
			b := s.Writes[j]
			val[b] = m[o.Value]
			if p.global[b] {
				b.Writer = k
				k.Writes = append(k.Writes, b)
				body.SetOutput(b.Name, val[b])
			} else {
				b.Kind = SharedBuffer
			}
		}
		k.Ops = append(k.Ops, s.Ops...)
	}
	k.Body = body
	return k
}

// copyBody adds kernel s's body to body, m mapping s's values to body's (entries already in m
// stand for those inputs): an input per buffer not in val yet (appended to reads), then s's ops.
func copyBody(body *ir.Graph, s *Kernel, val map[*Buffer]*ir.Value, m map[*ir.Value]*ir.Value, reads *[]*Buffer) map[*ir.Value]*ir.Value {
	for j, in := range s.Body.Inputs() {
		if m[in] != nil {
			continue
		}
		b := s.Reads[j]
		if val[b] == nil {
			val[b] = body.Input(b.Name, ir.Type{DType: b.Type.DType, Shape: b.Type.Shape.Clone()}, nil)
			*reads = append(*reads, b)
		}
		m[in] = val[b]
	}
	for _, v := range s.Body.Values {
		if v.Op == ir.OpInput {
			continue
		}
		args := make([]*ir.Value, len(v.Args))
		for j, a := range v.Args {
			args[j] = m[a]
		}
		m[v] = body.Add(v.Op, ir.Type{DType: v.Type.DType, Shape: v.Type.Shape.Clone()}, v.Attrs.Clone(), args...)
	}
	return m
}

// checkPersistent checks a persistent kernel's stages (each as a kernel of its own, against the
// same bounds), that every stage reads only the kernel's reads or values earlier stages left in
// shared memory, that each written buffer goes where the plan says, and that no two slots a stage
// sees at once overlap in shared memory.
func checkPersistent(k *Kernel, bounds FusionOptions) error {
	if len(k.Stages) < 2 {
		return fmt.Errorf("persistent kernel with %d stages", len(k.Stages))
	}
	if k.SharedBytes > int64(bounds.PersistShared) {
		return fmt.Errorf("uses %d bytes of shared memory, more than PersistShared (%d)", k.SharedBytes, bounds.PersistShared)
	}
	slot := map[*Buffer]SharedSlot{}
	for i, s := range k.Shared {
		switch {
		case s.Buffer == nil || s.From < 0 || s.To < s.From || s.To >= len(k.Stages):
			return fmt.Errorf("shared slot %d has no buffer or stages %d..%d", i, s.From, s.To)
		case s.Offset%sharedAlign != 0 || s.Offset < 0 || s.Offset+s.Buffer.Bytes() > k.SharedBytes:
			return fmt.Errorf("shared slot of %s at %d (+%d bytes) is not aligned or outside %d bytes", s.Buffer.Name, s.Offset, s.Buffer.Bytes(), k.SharedBytes)
		}
		if _, dup := slot[s.Buffer]; dup {
			return fmt.Errorf("%s has two shared slots", s.Buffer.Name)
		}
		for _, o := range k.Shared[:i] {
			if o.From <= s.To && s.From <= o.To && o.Offset < s.Offset+s.Buffer.Bytes() && s.Offset < o.Offset+o.Buffer.Bytes() {
				return fmt.Errorf("shared slots of %s and %s overlap while both are live", o.Buffer.Name, s.Buffer.Name)
			}
		}
		slot[s.Buffer] = s
	}
	global := map[*Buffer]bool{}
	for _, b := range k.Writes {
		global[b] = true
	}
	external := map[*Buffer]bool{}
	for _, b := range k.Reads {
		external[b] = true
	}
	written := map[*Buffer]bool{}
	for i, s := range k.Stages {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("stage %s: %s", s.Name, fmt.Sprintf(format, args...))
		}
		if !strings.HasPrefix(s.Name, fmt.Sprintf("s%d_", i)) {
			return fail("name does not start with s%d_", i)
		}
		if s.Kind != Loop && s.Kind != Contraction {
			return fail("a %s kernel cannot be a stage", s.Kind)
		}
		if p := kernelPool(s); p != nil {
			return fail("a contraction that pools (%s) cannot be a stage", s.Body.Format(p))
		}
		if n := s.Space.NumElements(); n > bounds.PersistElems {
			return fail("space of %d elements, more than PersistElems (%d)", n, bounds.PersistElems)
		}
		if err := checkBody(s, bounds); err != nil {
			return fail("%v", err)
		}
		for _, b := range s.Reads {
			sl, shared := slot[b]
			if !external[b] && !(shared && sl.From < i && i <= sl.To) {
				return fail("reads %s, which is neither read by the kernel nor in shared memory at this stage", b.Name)
			}
		}
		for _, b := range s.Writes {
			sl, shared := slot[b]
			switch {
			case written[b]:
				return fail("buffer %s has another writer", b.Name)
			case global[b] && b.Writer != k, !global[b] && (b.Kind != SharedBuffer || b.Writer != s):
				return fail("buffer %s (%s) has the wrong writer", b.Name, b.Kind)
			case shared && sl.From != i:
				return fail("writes %s, whose shared slot starts at stage %d", b.Name, sl.From)
			case !global[b] && !shared:
				return fail("writes %s, which goes neither to memory nor to shared memory", b.Name)
			}
			written[b] = true
		}
	}
	for _, b := range k.Writes {
		if !written[b] {
			return fmt.Errorf("writes %s, which no stage computes", b.Name)
		}
	}
	return nil
}
