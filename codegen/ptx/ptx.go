package ptx

import (
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Target selects the GPU architecture the PTX is written for.
type Target struct {
	SM   int  // 80, 86, 89 or 90
	TF32 bool // f32 matmuls with strided operands run on tf32 tensor cores (mma.sync m16n8k8); see Launch.Notes
}

// Kernel is one fused kernel: its graph's inputs and params are read from global memory, its
// outputs written; the ops in between are fused into the one entry.
type Kernel struct {
	Name  string // the .entry name, e.g. "k3_matmul_bias_relu"
	Graph *ir.Graph
	// Stages make the kernel persistent (persistent.go): one block runs them in order, Graph
	// being their union (its inputs and outputs are the kernel's parameters). A stage's inputs
	// and outputs are named after Graph's or after entries of Shared, the byte offsets of the
	// values kept in SharedBytes of shared memory between stages.
	Stages      []Kernel
	Shared      map[string]int
	SharedBytes int
	// InPlace (an update_slice kernel, or attention appending to its caches) says each update's
	// output memory is its operand's: the kernel writes the update's rows only (update.go,
	// attention_append.go).
	InPlace bool
	// Symbolic says the kernel's space has sizes known only at launch (the graph's dims): the
	// Graph holds it at the bound, and the entry takes its size (an element count, its rows or
	// its M) as an ArgSize parameter (symloop.go, symgemm.go).
	Symbolic bool
	// Rows (a symbolic kernel) is its row count at the bound: its symbolic buffers are that many
	// rows of a static inner size, and the run computes the first rows only, each independently of
	// the others (the compiler checks it). The size parameter is the run's rows times the
	// template's unit per row (SymWork.Scale). 0: every unit of the template is a row, and only
	// flat elementwise loop kernels are taken.
	Rows int
}

// ArgKind says what a kernel parameter points to.
type ArgKind int

const (
	ArgInput  ArgKind = iota // a graph input (Arg.Index into Graph.Inputs())
	ArgParam                 // a graph parameter (Arg.Index into Graph.Params())
	ArgOutput                // a graph output (Arg.Index into Graph.Outputs)
	// ArgScratch is a kernel-private buffer of Arg.Bytes bytes (Index and Name unused). It must
	// be zero before the first launch; the kernel leaves it zero again, so it can be reused.
	ArgScratch
	// ArgError is the launch's error word (ErrorWordBytes, zeroed before the run; indexcheck.go):
	// where a gather records an index outside its table instead of reading past the table.
	ArgError
	// ArgSize is a .u32 holding the kernel's size at the run's sizes (Kernel.Symbolic;
	// SymWork), not an address.
	ArgSize
)

func (k ArgKind) String() string {
	return [...]string{"input", "param", "output", "scratch", "error", "size"}[k]
}

// Arg binds one .param of the entry, in declaration order. Every parameter is a .u64 global
// address of a buffer aligned to 16 bytes (vector loads rely on it).
type Arg struct {
	Kind  ArgKind
	Index int
	Name  string // the input, param or output name
	Bytes int    // size of a scratch buffer
}

// Launch is how to run a generated kernel.
type Launch struct {
	// Entry is the .entry the launch runs: the kernel's own name, or that of the first kernel
	// whose code it shares (Module). Generate leaves it empty.
	Entry       string
	Grid, Block [3]int
	SharedBytes int // dynamic shared memory (all current templates use static shared memory: 0)
	Params      []Arg
	// Notes are what a reader of the plan should know about how the kernel was generated:
	// today, that an f32 contraction asked for tf32 (Target.TF32) runs on FFMA or the direct
	// template instead, and why. The same text is a comment above the entry.
	Notes []string
	// Producer is the code generator that wrote the entry when they were chosen per kernel
	// (codegen/backend's Auto); empty otherwise.
	Producer string
	// Checks describe the gathers that record a bad index in the ArgError parameter, by site
	// number (indexcheck.go); empty when the kernel has no such parameter.
	Checks []IndexCheck
	// Work is how a symbolic kernel's grid follows its element count (symloop.go); nil for a
	// static kernel, whose Grid is final.
	Work *SymWork
}

// Generate lowers one kernel to a PTX .entry (with any module-level constant arrays it needs
// before it). The text is a fragment: Module wraps it with the header.
func Generate(k Kernel, t Target) (string, Launch, error) {
	if err := checkTarget(t); err != nil {
		return "", Launch{}, err
	}
	if err := checkFP8(k, t); err != nil {
		return "", Launch{}, err
	}
	var globals []string
	entry, l, err := generate(k, t, &globals)
	if err != nil {
		return "", Launch{}, err
	}
	for _, a := range l.Params {
		if a.Kind == ArgError {
			l.Checks = IndexChecks(k)
		}
	}
	return strings.Join(append(globals, entry), "\n"), l, nil
}

// Module lowers kernels into one module. Kernels whose graphs are the same up to names share one
// entry, generated once under the first one's name (ShareKey); every kernel gets a Launch, in
// order, whose Entry names the entry it runs and whose Params bind its own buffers. The entries
// appear in the order of their first kernel, each run by several kernels headed by a comment
// naming them.
func Module(kernels []Kernel, t Target) (string, []Launch, error) {
	if err := checkTarget(t); err != nil {
		return "", nil, err
	}
	type entry struct {
		text  string
		first int      // the kernel it was generated for
		users []string // the kernels that run it
	}
	var (
		launches = make([]Launch, len(kernels))
		entries  []*entry
		byKey    = map[string]*entry{}
		seen     = map[string]bool{}
	)
	for i, k := range kernels {
		if seen[k.Name] {
			return "", nil, fmt.Errorf("%s: two kernels have this name", k.Name)
		}
		seen[k.Name] = true
		key := ShareKey(k)
		if e := byKey[key]; e != nil && key != "" {
			launches[i] = Rebind(launches[e.first], k)
			e.users = append(e.users, k.Name)
			continue
		}
		text, l, err := Generate(k, t)
		if err != nil {
			return "", nil, err
		}
		l.Entry = k.Name
		launches[i] = l
		e := &entry{text: text, first: i, users: []string{k.Name}}
		entries = append(entries, e)
		byKey[key] = e
	}
	// Written piece by piece into one allocation: a prefill module runs to megabytes.
	head := fmt.Sprintf("//\n// Generated by gcomp. Do not edit.\n//\n\n.version %s\n.target sm_%d\n.address_size 64\n", ptxVersion(kernels, t), t.SM)
	comments := make([]string, len(entries))
	size := len(head)
	for i, e := range entries {
		comments[i] = UsersComment(e.users[0], e.users)
		size += 1 + len(comments[i]) + len(e.text)
	}
	var s strings.Builder
	s.Grow(size)
	s.WriteString(head)
	for i, e := range entries {
		s.WriteByte('\n')
		s.WriteString(comments[i])
		s.WriteString(e.text)
	}
	return s.String(), launches, nil
}

func checkTarget(t Target) error {
	switch t.SM {
	case 80, 86, 89, 90:
		return nil
	}
	return fmt.Errorf("target sm_%d is not supported (want 80, 86, 89 or 90)", t.SM)
}

// generate picks the template for the kernel's ops.
func generate(k Kernel, t Target, globals *[]string) (string, Launch, error) {
	g := k.Graph
	if err := ops.Verify(g); err != nil {
		return "", Launch{}, fmt.Errorf("%s: %w", k.Name, err)
	}
	if len(g.Outputs) == 0 {
		return "", Launch{}, fmt.Errorf("%s: the kernel has no outputs", k.Name)
	}
	for _, v := range g.Values {
		if n := v.Type.Shape.NumElements(); n >= 1<<31 {
			return "", Launch{}, fmt.Errorf("%s: %s has %d elements; 32-bit indexing needs fewer than 2^31", k.Name, g.Format(v), n)
		}
	}
	if k.Symbolic {
		entry, l, err := symbolicKernel(k, t, globals)
		if err != nil {
			return "", Launch{}, fmt.Errorf("%s: %w", k.Name, err)
		}
		return entry, l, nil
	}
	if emptyOutputs(g) && len(k.Stages) == 0 {
		return emptyKernel(k, globals)
	}
	if len(k.Stages) > 0 {
		entry, l, err := persistentKernel(k, globals)
		if err != nil {
			return "", Launch{}, fmt.Errorf("%s: %w", k.Name, err)
		}
		return entry, l, nil
	}
	if v, ok := UpdateOp(g); ok {
		entry, l, err := updateKernel(k, v, globals)
		if err != nil {
			return "", Launch{}, fmt.Errorf("%s: %w", k.Name, err)
		}
		return entry, l, nil
	}
	if op, ok := BackwardAttention(g); ok {
		entry, l, err := attentionBwdKernel(k, op)
		if err != nil {
			return "", Launch{}, fmt.Errorf("%s: %w", k.Name, err)
		}
		return entry, l, nil
	}
	if _, ok := PlanAttention(g); ok {
		entry, l, err := attentionKernel(k, t)
		if err != nil {
			return "", Launch{}, fmt.Errorf("%s: %w", k.Name, err)
		}
		return entry, l, nil
	}
	kinds, count := contractionKinds(g)
	var (
		entry string
		l     Launch
		err   error
	)
	switch {
	case len(kinds) == 0:
		entry, l, err = loopKernel(k, globals)
	case len(kinds) == 1 && kinds[0] == "reduce":
		entry, l, err = reduceKernel(k, globals)
	case len(kinds) == 1 && (kinds[0] == "matmul" || kinds[0] == "conv2d") && count[kinds[0]] == 1, NormPrologue(g):
		entry, l, err = matmulKernel(k, t, globals)
	default:
		err = fmt.Errorf("a kernel fusing %s is not a supported fusion", strings.Join(kinds, " and "))
		if len(kinds) == 1 {
			err = fmt.Errorf("%s is not supported by the PTX code generator yet", kinds[0])
			if count[kinds[0]] > 1 {
				err = fmt.Errorf("a kernel with %d %s ops is not a supported fusion", count[kinds[0]], kinds[0])
			}
		}
	}
	if err != nil {
		return "", Launch{}, fmt.Errorf("%s: %w", k.Name, err)
	}
	return entry, l, nil
}

// live returns the values the outputs depend on, in definition order.
func live(g *ir.Graph) []*ir.Value {
	need := map[*ir.Value]bool{}
	var mark func(v *ir.Value)
	mark = func(v *ir.Value) {
		if need[v] {
			return
		}
		need[v] = true
		for _, a := range v.Args {
			mark(a)
		}
	}
	for _, o := range g.Outputs {
		mark(o.Value)
	}
	var vs []*ir.Value
	for _, v := range g.Values {
		if need[v] {
			vs = append(vs, v)
		}
	}
	return vs
}

// header starts an entry: the comment listing the fused ops and one .u64 parameter per buffer,
// each converted to a global address. It returns the generator with those addresses bound.
func header(k Kernel, b *builder, globals *[]string) (*gen, []Arg) {
	g := k.Graph
	b.comment = append(b.comment, k.Name+" fuses:")
	format := g.Formatter()
	for _, v := range live(g) {
		if v.Op != ir.OpInput && v.Op != ir.OpParam {
			b.comment = append(b.comment, "  "+format(v))
		}
	}
	gn := newGen(b, k.Name, globals)
	gn.kernelGraph = g
	var args []Arg
	bind := func(kind ArgKind, i int, name string, v *ir.Value) {
		r := b.globalParam(fmt.Sprintf("%s_param_%d", k.Name, len(args)))
		args = append(args, Arg{Kind: kind, Index: i, Name: name})
		if kind != ArgOutput {
			gn.ptr[v] = r
		} else {
			gn.outPtr = append(gn.outPtr, r)
		}
	}
	for i, v := range g.Inputs() {
		bind(ArgInput, i, v.Name, v)
	}
	for i, v := range g.Params() {
		bind(ArgParam, i, v.Name, v)
	}
	for i, o := range g.Outputs {
		bind(ArgOutput, i, o.Name, o.Value)
	}
	if sites := gatherSites(g); len(sites) > 0 {
		p := b.param("u64", fmt.Sprintf("%s_param_%d", k.Name, len(args)))
		args = append(args, Arg{Kind: ArgError})
		gn.errPtr = b.reg(rU64)
		b.ins("ld.param.u64", gn.errPtr, "["+p+"]")
		b.ins("cvta.to.global.u64", gn.errPtr, gn.errPtr)
		gn.sites = sites
	}
	return gn, args
}

// globalThread emits the flat thread id and the grid-wide thread count.
func globalThread(b *builder) (tid, nthreads string) {
	ctaid, ntid, t, nct := b.reg(rU32), b.reg(rU32), b.reg(rU32), b.reg(rU32)
	b.ins("mov.u32", ctaid, "%ctaid.x")
	b.ins("mov.u32", ntid, "%ntid.x")
	b.ins("mov.u32", t, "%tid.x")
	b.ins("mov.u32", nct, "%nctaid.x")
	tid, nthreads = b.reg(rU32), b.reg(rU32)
	b.ins("mad.lo.s32", tid, ctaid, ntid, t)
	b.ins("mul.lo.s32", nthreads, nct, ntid)
	return tid, nthreads
}

// blockTiles opens a block-stride loop over tiles 0..tiles-1 (`for id := ctaid.x; id < tiles;
// id += nctaid.x`): every thread of a block runs the same iterations, so the body may use
// bar.sync. next closes the loop.
func blockTiles(b *builder, tiles int) (id string, next func()) {
	id, step := b.reg(rU32), b.reg(rU32)
	b.ins("mov.u32", id, "%ctaid.x")
	b.ins("mov.u32", step, "%nctaid.x")
	head, done := b.label("tile"), b.label("tiles_done")
	b.place(head)
	p := b.reg(rPred)
	b.ins("setp.ge.u32", p, id, imm(tiles))
	b.braIf(p, done)
	return id, func() {
		b.ins("add.s32", id, id, step)
		b.bra(head)
		b.place(done)
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// emptyOutputs reports whether no output of g has an element.
func emptyOutputs(g *ir.Graph) bool {
	for _, o := range g.Outputs {
		if o.Value.Type.Shape.NumElements() > 0 {
			return false
		}
	}
	return true
}

// emptyKernel is the kernel of outputs without elements: it computes and stores nothing. It
// takes the parameters its buffers bind and launches as one thread, so the plan stays uniform
// (a template's grid would have no blocks: a contraction with a zero-size free dim).
func emptyKernel(k Kernel, globals *[]string) (string, Launch, error) {
	b := newBuilder(k.Name)
	_, args := header(k, b, globals)
	b.note("every output is empty: nothing to compute")
	return b.text(), Launch{Grid: [3]int{1, 1, 1}, Block: [3]int{1, 1, 1}, Params: args}, nil
}
