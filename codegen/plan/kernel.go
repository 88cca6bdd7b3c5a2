package plan

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
)

// A gather whose index lies outside its table does not trap: a trap ends the launch with a
// "trap executed" (on a GPU, an unspecified launch failure that leaves the context unusable)
// that cannot say which index was wrong. Instead the first bad index a launch meets is written to
// the launch's error word, the read uses row 0 so that nothing reads outside the table, and
// the executor, reading the word after the run, fails the run naming the gather, the element of
// the indices and its value, as the reference interpreter does.
//
// The error word is ErrorWordBytes at the ArgError parameter, zero before the run:
//
//	u64 site     the gather's number among the kernel's (IndexCheck.Site), 0 while no index was bad
//	u64 element  the linear index of the bad element in the indices tensor
//	i64 value    the index
//
// The thread whose atomic compare-and-swap of the site from 0 succeeds writes the other two:
// one record per launch, whichever thread got there first.
const ErrorWordBytes = 32

// IndexCheck describes one gather site of a kernel for the error message.
type IndexCheck struct {
	Site    int       // its number in the error word, from 1
	Op      string    // the gather as the kernel graph prints it
	Pos     string    // its source position, if known
	Indices string    // the indices operand: a kernel input's buffer name, or the value's
	Table   string    // the table's type
	Rows    int       // the table's rows: a valid index lies in [0, Rows)
	Value   *ir.Value // the gather in the kernel's graph
}

// GatherSites numbers the gathers of g from 1 in the order its live values are listed, which
// depends only on the graph's structure: kernels that share code (shareKey) number alike.
func GatherSites(g *ir.Graph) map[*ir.Value]int {
	sites := map[*ir.Value]int{}
	for _, v := range live(g) {
		if v.Op == "gather" {
			sites[v] = len(sites) + 1
		}
	}
	if len(sites) == 0 {
		return nil
	}
	return sites
}

// IndexChecks lists the gather sites of k's error word, in site order.
func IndexChecks(k Kernel) []IndexCheck {
	sites := GatherSites(k.Graph)
	if sites == nil {
		return nil
	}
	out := make([]IndexCheck, len(sites))
	format := k.Graph.Formatter()
	for v, n := range sites {
		table, idx := v.Args[0], v.Args[1]
		out[n-1] = IndexCheck{Site: n, Op: format(v), Pos: v.Pos, Indices: idx.Name, Table: table.Type.String(),
			Rows: table.Type.Shape[0], Value: v}
	}
	return out
}

// String is the check's description, for errors: "gather(%table, %ids) at model.go:9".
func (c IndexCheck) String() string {
	if c.Pos == "" {
		return c.Op
	}
	return fmt.Sprintf("%s at %s", c.Op, c.Pos)
}

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
	// ParamInputs names the graph inputs bound to the model's parameters, which no kernel of a
	// run writes (the compiler's kernel bodies take every buffer as an input); with the graph's
	// own OpParam values they are what an entry for programmatic dependent launch may load
	// before waiting for the kernel before it (codegen/ptx pdl.go). nil: none known.
	ParamInputs map[string]bool
	// Rows (a symbolic kernel) is its row count at the bound: its symbolic buffers are that many
	// rows of a static inner size, and the run computes the first rows only, each independently of
	// the others (the compiler checks it). The size parameter is the run's rows times the
	// template's unit per row (SymWork.Scale). 0: every unit of the template is a row, and only
	// flat elementwise loop kernels are taken.
	Rows int
	// Sizes (a symbolic kernel whose index arithmetic follows the sizes: attention,
	// codegen/ptx's symattn.go) are its values' sizes as expressions over the dims; the kernel
	// takes each dim they name as an ArgSize parameter (Arg.Expr) and computes its strides.
	Sizes map[*ir.Value][]sym.Expr
}

// ArgKind says what a kernel parameter points to.
type ArgKind int

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
	Scale int    // ArgSize of a persistent kernel's stage: the stage's units per row
	// Expr (an ArgSize) is the size it holds as an expression over the dims (a dim's name); ""
	// is the kernel's size, its rows times SymWork.Scale or SymWork.Elements.
	Expr string
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
	// PDL says the entry keeps the programmatic dependent launch contract (sm_90; codegen/ptx
	// pdl.go): the runtime may launch it while the kernel before it still runs.
	PDL bool
	// Work is how a symbolic kernel's grid follows its element count (symloop.go); nil for a
	// static kernel, whose Grid is final.
	Work *SymWork
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

// SymWork is how a symbolic kernel's launch depends on its size n at the run's sizes: n is the
// kernel's rows (Kernel.Rows, as an expression over the dims) times Scale. A loop kernel (Tile 0)
// takes n elements, Vector per work item, so max(1, n/Vector, n%Vector) work items (the groups,
// or the scalar tail if longer), spread over blocks of Block threads, at most MaxBlocks of them
// (the loop is grid-stride). A row kernel takes n units (rows, or a GEMM's M) in Tile per block
// along grid axis Axis, at most MaxBlocks blocks; its other grid axes are as at the bound.
type SymWork struct {
	Vector, Block, MaxBlocks int
	Scale, Tile, Axis        int
	// Elements, when set, is n as an expression over the dims, for a kernel whose size is not a
	// multiple of its rows (attention's blocks: codegen/ptx's symattn.go).
	Elements string
}

// Grid is the launch's grid.x for a loop kernel of n elements.
func (w SymWork) Grid(n int64) int {
	v := int64(w.Vector)
	work := max(1, n/v, n%v)
	return int(min((work+int64(w.Block)-1)/int64(w.Block), int64(w.MaxBlocks)))
}

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
	// SymWork), not an address. In a persistent kernel, one per symbolic stage: stage Index's
	// rows times Scale, its units per row.
	ArgSize
)
