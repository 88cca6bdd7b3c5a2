package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Kind says how a kernel iterates; codegen picks its template by kind.
type Kind uint8

const (
	// Loop kernels run one thread per element of Space and compute every op by index
	// arithmetic: elementwise ops, views (reshape, transpose, broadcast, slice), concat, pad,
	// and pooling or gather reading buffers.
	Loop Kind = iota + 1
	// Row kernels reduce Axes of Space, one row (the elements that differ only in Axes) per
	// block: the reductions' elementwise producers, several reductions over the same rows
	// (softmax, layer norm), and elementwise epilogues of the reduced values broadcast back over
	// the row all happen on chip.
	Row
	// Contraction kernels compute one dot_general or conv2d over Space (its result shape),
	// reading operands through views, and apply an elementwise epilogue before the store.
	Contraction
	// Persistent kernels run Stages (loop and contraction kernels) in order in one block,
	// passing values between stages in shared memory (persist.go).
	Persistent
	// Custom kernels run one custom op (ops class custom): the user's own entry, compiled
	// from the op's source; nothing is fused with it, and it reads and writes memory only.
	Custom
	// Attention kernels run one attention op (ops.AttentionOp), reading its operands from memory
	// through reshapes only, and stream K and V past the scores (codegen/ptx's attention
	// template).
	Attention
	// Update kernels run one update_slice op (ops.UpdateSliceOp), reading its operands from
	// memory. Written InPlace over its operand, a launch covers the update only.
	Update
)

var kindNames = [...]string{Loop: "loop", Row: "row", Contraction: "contraction", Persistent: "persistent", Custom: "custom", Attention: "attention", Update: "update"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// BufferKind says where a buffer lives.
type BufferKind uint8

const (
	InputBuffer  BufferKind = iota + 1 // a graph input, supplied by the caller
	ParamBuffer                        // a parameter (weight), bound at load time
	OutputBuffer                       // a graph output, returned to the caller
	TempBuffer                         // an intermediate: placed in the arena by the memory plan
	SharedBuffer                       // an intermediate of a persistent kernel's stages, only in shared memory
)

var bufferKindNames = [...]string{InputBuffer: "input", ParamBuffer: "param", OutputBuffer: "output", TempBuffer: "temp", SharedBuffer: "shared"}

func (k BufferKind) String() string { return bufferKindNames[k] }

// Buffer is one tensor in device memory.
type Buffer struct {
	Name   string
	Kind   BufferKind
	Type   ir.Type
	Writer *Kernel // nil for inputs and parameters
}

// Bytes is the buffer's size.
func (b *Buffer) Bytes() int64 { return int64(b.Type.Bytes()) }

// Kernel is one fused kernel: a small graph whose inputs are the buffers it reads and whose
// outputs are the buffers it writes, named as the buffers are.
type Kernel struct {
	Name  string   // "k3_matmul_bias_relu": position in the schedule and what it computes
	Kind  Kind     // the iteration scheme
	Space ir.Shape // Loop: output shape; Row: shape of the reduced operand; Contraction: result shape
	Axes  []int    // Row: the reduced axes of Space
	// RowPasses (row kernels) is how many times the kernel reads its inputs: 1 when a row fits on
	// chip (FusionOptions.MaxRow), else the row is streamed once per chained reduction and once
	// more for the epilogue.
	RowPasses int
	Body      *ir.Graph
	Reads     []*Buffer // in the order of Body's inputs
	Writes    []*Buffer // in the order of Body's outputs
	Ops       []*ir.Value
	// BindTime kernels read parameters only: the runtime runs them when weights are bound, not
	// on every run (bindtime.go).
	BindTime bool
	// InPlace (update kernels, and attention kernels appending to their caches: appendkv.go)
	// says the memory plan gave each update's result its operand's memory (a dead temp, or an
	// input the program donates to the output it feeds; Plan records both): the kernel writes
	// the update's elements only and leaves the rest as it is.
	InPlace bool
	// Origins maps Body's values to the values of the pass pipeline's graph they compute, whose
	// source positions diagnostics name (a gather's bad index).
	Origins map[*ir.Value]*ir.Value
	// Persistent kernels: the stages in order (named sN_..., their writes either the kernel's
	// Writes or SharedBuffers), the values kept in shared memory and its size. Body is the
	// stages' bodies in one graph.
	Stages      []*Kernel
	Shared      []SharedSlot
	SharedBytes int64
	label       string // Name without the number
}

// KernelGraph is the fused program: kernels in execution order over named buffers.
type KernelGraph struct {
	Name    string
	Buffers []*Buffer // inputs and parameters in declaration order, then written buffers in kernel order
	Kernels []*Kernel
	Outputs []*Buffer     // one per graph output, in the graph's order
	Bounds  FusionOptions // what one kernel may hold; CheckKernels checks them
	// PersistRuns are the runs of the schedule the persist pass made persistent kernels of.
	PersistRuns []PersistRun
}

// Buffer returns the buffer named name, or nil.
func (kg *KernelGraph) Buffer(name string) *Buffer {
	for _, b := range kg.Buffers {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// readers maps each buffer to the kernels that read it, in order.
func (kg *KernelGraph) readers() map[*Buffer][]*Kernel {
	readers := map[*Buffer][]*Kernel{}
	for _, k := range kg.Kernels {
		for _, b := range k.Reads {
			readers[b] = append(readers[b], k)
		}
	}
	return readers
}

// renumber names kernels by their position and orders the written buffers to match.
func (kg *KernelGraph) renumber() {
	var bufs []*Buffer
	for _, b := range kg.Buffers {
		if b.Writer == nil {
			bufs = append(bufs, b)
		}
	}
	for i, k := range kg.Kernels {
		k.Name = fmt.Sprintf("k%d_%s", i, k.label)
		k.Body.Name = k.Name
		bufs = append(bufs, k.Writes...)
	}
	kg.Buffers = bufs
}

// String prints the kernel graph in a deterministic text form (used by golden files and
// --dump-after): buffers, then each kernel with its body in the .gir syntax.
func (kg *KernelGraph) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "kernels %s {\n", kg.Name)
	for _, b := range kg.Buffers {
		if b.Writer == nil {
			fmt.Fprintf(&sb, "  %s %%%s : %s\n", b.Kind, b.Name, b.Type)
		}
	}
	for _, k := range kg.Kernels {
		k.write(&sb, "  ", "kernel")
	}
	for _, b := range kg.Outputs {
		fmt.Fprintf(&sb, "  output %%%s : %s\n", b.Name, b.Type)
	}
	sb.WriteString("}\n")
	return sb.String()
}

// write prints the kernel (a persistent kernel as its stages) with the given indent.
func (k *Kernel) write(sb *strings.Builder, indent, word string) {
	sb.WriteString(indent + k.header(word))
	sb.WriteString(" {\n")
	if k.Kind == Persistent {
		for _, s := range k.Stages {
			s.write(sb, indent+"  ", "stage")
		}
		sb.WriteString(indent + "}\n")
		return
	}
	names := k.Body.Names()
	for _, v := range k.Body.Values {
		if v.Op != ir.OpInput {
			fmt.Fprintf(sb, "%s  %s\n", indent, k.Body.Format(v))
		}
	}
	for _, o := range k.Body.Outputs {
		fmt.Fprintf(sb, "%s  output %s = %%%s\n", indent, o.Name, names[o.Value])
	}
	sb.WriteString(indent + "}\n")
}

// writableShape reports whether a kernel's threads can write a buffer of shape s: loop and
// contraction kernels write their space (a contraction whose epilogue pools also the pooled
// shape), row kernels their space or one value per row.
func writableShape(k *Kernel, s ir.Shape) bool {
	if p := kernelPool(k); p != nil && s.Equal(p.Type.Shape) {
		return true
	}
	if k.Kind == Attention && len(k.Space) == 4 && (s.Equal(k.Space[:3]) || len(s) == 4 && s[:3].Equal(k.Space[:3])) {
		return true // the forward writing its attention_lse (a value per query row); dk beside dv
	}
	if k.Kind != Row {
		return s.Equal(k.Space)
	}
	keep, drop := rowShapes(k.Space, k.Axes)
	return s.Equal(k.Space) || s.Equal(keep) || s.Equal(drop)
}

// header is the kernel's first line; word is "kernel", or "stage" inside a persistent kernel.
func (k *Kernel) header(word string) string {
	var sb strings.Builder
	if k.Kind == Persistent {
		fmt.Fprintf(&sb, "%s %s %s stages=%d", word, k.Name, k.Kind, len(k.Stages))
	} else {
		fmt.Fprintf(&sb, "%s %s %s %s", word, k.Name, k.Kind, k.Space)
	}
	if k.Kind == Row {
		fmt.Fprintf(&sb, " axes=%s", ir.FormatAttr(k.Axes))
		if k.RowPasses > 1 {
			fmt.Fprintf(&sb, " passes=%d", k.RowPasses)
		}
	}
	list := func(bs []*Buffer) string {
		var parts []string
		for _, b := range bs {
			parts = append(parts, "%"+b.Name)
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(&sb, " reads(%s) writes(%s)", list(k.Reads), list(k.Writes))
	if k.BindTime {
		sb.WriteString(" bind")
	}
	if k.Kind == Persistent {
		var parts []string
		for _, s := range k.Shared {
			parts = append(parts, fmt.Sprintf("%%%s@%d", s.Buffer.Name, s.Offset))
		}
		fmt.Fprintf(&sb, " shared(%s) shared_bytes=%d", strings.Join(parts, ", "), k.SharedBytes)
	}
	return sb.String()
}

// literal values are copied into every kernel that uses them, at no cost.
func literal(v *ir.Value) bool { return v.Op == "constant" || v.Op == "iota" }

// CheckKernels checks a kernel graph's invariants: every body verifies against the op table
// and reads and writes exactly its buffers; each written buffer has one writer, which runs
// before every reader; every temp has a reader; every output is written; kinds match the ops fused; no kernel computes
// more than Bounds.MaxOps ops (literals are free) or reads more than Bounds.MaxReads buffers,
// unless one op of it needs that many operands.
func CheckKernels(kg *KernelGraph) error {
	if kg == nil {
		return fmt.Errorf("no kernel graph")
	}
	bounds := kg.Bounds.withDefaults()
	known := map[*Buffer]bool{}
	names := map[string]bool{}
	for _, b := range kg.Buffers {
		if names[b.Name] {
			return fmt.Errorf("buffer %s declared twice", b.Name)
		}
		names[b.Name] = true
		if b.Writer == nil {
			if b.Kind != InputBuffer && b.Kind != ParamBuffer {
				return fmt.Errorf("%s buffer %s has no writer", b.Kind, b.Name)
			}
			known[b] = true
		}
	}
	written, read := map[*Buffer]bool{}, map[*Buffer]bool{}
	for i, k := range kg.Kernels {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("kernel %s: %s", k.Name, fmt.Sprintf(format, args...))
		}
		if !strings.HasPrefix(k.Name, fmt.Sprintf("k%d_", i)) {
			return fail("name does not start with k%d_", i)
		}
		if err := checkBody(k, bounds); err != nil {
			return fail("%v", err)
		}
		for _, b := range k.Reads {
			if !known[b] {
				return fail("reads %s before it is written", b.Name)
			}
			read[b] = true
		}
		for _, b := range k.Writes {
			switch {
			case b.Writer != k || written[b]:
				return fail("buffer %s has another writer", b.Name)
			case b.Kind != TempBuffer && b.Kind != OutputBuffer:
				return fail("writes %s buffer %s", b.Kind, b.Name)
			}
			written[b] = true
			known[b] = true
		}
		if k.Kind == Persistent {
			if err := checkPersistent(k, bounds); err != nil {
				return fail("%v", err)
			}
		} else if len(k.Stages) > 0 || len(k.Shared) > 0 {
			return fail("a %s kernel with stages", k.Kind)
		}
	}
	for _, b := range kg.Buffers {
		if b.Writer != nil && !written[b] {
			return fmt.Errorf("buffer %s is never written", b.Name)
		}
		// A temp nothing reads is a store to DRAM for nothing (and a persistent kernel would have
		// nowhere to put it).
		if b.Kind == TempBuffer && !read[b] {
			return fmt.Errorf("%s writes temp %s, which no kernel reads", b.Writer.Name, b.Name)
		}
	}
	for _, b := range kg.Outputs {
		if b.Kind != OutputBuffer || !written[b] {
			return fmt.Errorf("output %s is not a written output buffer", b.Name)
		}
	}
	return nil
}

// checkBody checks what a kernel (or a stage of a persistent kernel) is on its own: its body
// verifies and reads and writes exactly its buffers, its kind matches the ops fused, and it stays
// within the bounds. A persistent kernel's body holds its stages' ops: the stages are held to the
// bounds on ops and kinds (checkPersistent), the kernel to the bound on reads.
func checkBody(k *Kernel, bounds FusionOptions) error {
	if err := ops.Verify(atBound(k.Body)); err != nil {
		return err
	}
	ins := k.Body.Inputs()
	if len(ins) != len(k.Reads) || len(k.Body.Outputs) != len(k.Writes) || len(k.Writes) == 0 {
		return fmt.Errorf("body has %d inputs and %d outputs for %d reads and %d writes", len(ins), len(k.Body.Outputs), len(k.Reads), len(k.Writes))
	}
	for j, b := range k.Reads {
		if ins[j].Name != b.Name || !ins[j].Type.Equal(b.Type) {
			return fmt.Errorf("input %s : %s does not match buffer %s : %s", ins[j].Name, ins[j].Type, b.Name, b.Type)
		}
	}
	for j, b := range k.Writes {
		if o := k.Body.Outputs[j]; o.Name != b.Name || !o.Value.Type.Equal(b.Type) {
			return fmt.Errorf("output %s does not match buffer %s : %s", o.Name, b.Name, b.Type)
		}
		appended := k.Kind == Attention && k.Body.Outputs[j].Value.Op == ops.UpdateSliceOp // a cache it writes the rows of
		if k.Kind != Persistent && !appended && !writableShape(k, b.Type.Shape) && !gemvRowOutput(k, k.Body.Outputs[j].Value) {
			return fmt.Errorf("writes %s : %s, which is not indexed by its space %s", b.Name, b.Type, k.Space)
		}
	}
	var contractions, reduces, others, computed, widest int
	for _, v := range k.Body.Values {
		if !literal(v) && v.Op != ir.OpInput {
			computed++
			widest = max(widest, len(slices.DeleteFunc(slices.Clone(v.Args), literal)))
		}
		switch ops.ClassOf(v.Op) {
		case ops.Contraction:
			contractions++
		case ops.Reduce:
			reduces++
		}
		switch v.Op {
		case "max_pool2d", "avg_pool2d":
			others++
		case "gather":
			if !gemvPrologueGather(k, v) {
				others++
			}
		}
	}
	// A contraction's epilogue may end in one pooling whose windows tile the space.
	if p := kernelPool(k); p != nil {
		if others != 1 {
			return fmt.Errorf("contraction kernel with %d gathers or poolings; its epilogue may end in one pooling", others)
		}
		if _, ok := PoolWindow(p); !ok || !p.Args[0].Type.Shape.Equal(k.Space) {
			return fmt.Errorf("pools %s, which does not tile the contraction's result %s", k.Body.Format(p), k.Space)
		}
	} else if k.Kind == Contraction && others != 0 {
		return fmt.Errorf("contraction kernel with %d gathers or poolings", others)
	}
	switch {
	case len(k.Reads) > max(bounds.MaxReads, widest):
		return fmt.Errorf("reads %d buffers, more than MaxReads (%d)", len(k.Reads), bounds.MaxReads)
	case k.Kind == Persistent:
		return nil
	case computed > bounds.MaxOps:
		return fmt.Errorf("computes %d ops, more than MaxOps (%d)", computed, bounds.MaxOps)
	case k.Kind == Contraction && contractions != 1, k.Kind != Contraction && contractions != 0:
		return fmt.Errorf("%s kernel with %d contractions", k.Kind, contractions)
	case k.Kind == Row && reduces == 0, k.Kind == Loop && reduces != 0:
		return fmt.Errorf("%s kernel with %d reductions", k.Kind, reduces)
	}
	return nil
}

// atBound is body with its values' types at their bounds, as the verifier takes a body: a
// kernel over a graph with dims keeps its buffers' symbolic sizes, which its body has no dims to
// check (the source graph checked them).
func atBound(body *ir.Graph) *ir.Graph {
	if !slices.ContainsFunc(body.Values, func(v *ir.Value) bool { return v.Type.Sym != nil }) {
		return body
	}
	c := body.Clone()
	for _, v := range c.Values {
		v.Type.Sym = nil
	}
	return c
}
