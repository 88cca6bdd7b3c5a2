package ptx

import (
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/ir"
)

// The producer-independent plans (kernels, launches, the tilings both producers share) live in
// codegen/plan. These names keep this package's code and its callers as they were.

type (
	Target        = plan.Target
	Kernel        = plan.Kernel
	ArgKind       = plan.ArgKind
	Arg           = plan.Arg
	Launch        = plan.Launch
	SymWork       = plan.SymWork
	IndexCheck    = plan.IndexCheck
	Reduction     = plan.Reduction
	ViewAxis      = plan.ViewAxis
	TransposeTile = plan.TransposeTile
	Contraction   = plan.Contraction
	Staged        = plan.Staged
	GEMM          = plan.GEMM
	GEMMOperand   = plan.GEMMOperand
	ConvGEMM      = plan.ConvGEMM
	MMA           = plan.MMA
	MMASide       = plan.MMASide
	CopyMap       = plan.CopyMap
	AttentionPlan = plan.AttentionPlan
	UpdateLayout  = plan.UpdateLayout
)

const (
	ArgInput       = plan.ArgInput
	ArgParam       = plan.ArgParam
	ArgOutput      = plan.ArgOutput
	ArgScratch     = plan.ArgScratch
	ArgError       = plan.ArgError
	ArgSize        = plan.ArgSize
	ErrorWordBytes = plan.ErrorWordBytes
	PersistThreads = plan.PersistThreads
	GEMMTileM      = plan.GEMMTileM
	GEMMTileN      = plan.GEMMTileN
	GEMMTileK      = plan.GEMMTileK
	GEMMThreads    = plan.GEMMThreads
	GEMMPad        = plan.GEMMPad
	StageRow       = plan.StageRow
	StageWarpBytes = plan.StageWarpBytes
)

// This package's own names for what moved to codegen/plan.
const (
	loopBlock     = plan.LoopBlock
	maxLoopBlocks = plan.MaxLoopBlocks
	attnWarps     = plan.AttnWarps
)

func live(g *ir.Graph) []*ir.Value                        { return plan.Live(g) }
func gatherSites(g *ir.Graph) map[*ir.Value]int           { return plan.GatherSites(g) }
func castConst(d ir.DType, f float64) float64             { return plan.CastConst(d, f) }
func exactInt(f float64) int64                            { return plan.ExactInt(f) }
func intLimits(d ir.DType) (lo, hi float64)               { return plan.IntLimits(d) }
func accType(dot *ir.Value, fmaF32 bool) ir.DType         { return plan.AccType(dot, fmaF32) }
func laneSplit(dot *ir.Value) bool                        { return plan.LaneSplit(dot) }
func contractLen(dot *ir.Value) int                       { return plan.ContractLen(dot) }
func vectorWidth(g *ir.Graph, shape ir.Shape) (int, bool) { return plan.VectorWidth(g, shape) }
func accumulator(v *ir.Value) (acc ir.DType, combine string, identity float64) {
	return plan.Accumulator(v)
}
func copyMap(kSt, freeSt, rows int) CopyMap {
	return GEMMOperand{KSt: kSt, FreeSt: freeSt}.Copies(rows)
}

// The plans this package's callers and code name here.

func IndexChecks(k Kernel) []IndexCheck                              { return plan.IndexChecks(k) }
func Params(g *ir.Graph) []Arg                                       { return plan.Params(g) }
func CastConst(d ir.DType, f float64) float64                        { return plan.CastConst(d, f) }
func ExactInt(f float64) int64                                       { return plan.ExactInt(f) }
func Accumulator(v *ir.Value) (ir.DType, string, float64)            { return plan.Accumulator(v) }
func AccType(dot *ir.Value, fmaF32 bool) ir.DType                    { return plan.AccType(dot, fmaF32) }
func Live(g *ir.Graph) []*ir.Value                                   { return plan.Live(g) }
func LoopPlan(g *ir.Graph) (v int, flat bool, grid, block [3]int)    { return plan.LoopPlan(g) }
func ViewPlan(v *ir.Value) []ViewAxis                                { return plan.ViewPlan(v) }
func RowCoords[T any](axes []int, kept, reduced []T) []T             { return plan.RowCoords(axes, kept, reduced) }
func ConvGeometry(v *ir.Value) (stride, pad, dil [2]int, groups int) { return plan.ConvGeometry(v) }
func NearestRepeat(v *ir.Value) (*ir.Value, int)                     { return plan.NearestRepeat(v) }
func DirectFallback(c Contraction) Contraction                       { return plan.DirectFallback(c) }
func RegTileOffset(i int) int                                        { return plan.RegTileOffset(i) }
func RegColStep(regs int) int                                        { return plan.RegColStep(regs) }
func ShareKey(k Kernel) string                                       { return plan.ShareKey(k) }
func Rebind(l Launch, k Kernel) Launch                               { return plan.Rebind(l, k) }
func UsersComment(entry string, users []string) string               { return plan.UsersComment(entry, users) }
func UpdateOp(g *ir.Graph) (*ir.Value, bool)                         { return plan.UpdateOp(g) }
func UpdatePlan(v *ir.Value) UpdateLayout                            { return plan.UpdatePlan(v) }
func PlanAttention(g *ir.Graph) (AttentionPlan, bool)                { return plan.PlanAttention(g) }
func planOf(op *ir.Value, ev int) AttentionPlan                      { return plan.PlanAttentionOp(op, ev) }
func forwardLSE(g *ir.Graph, att *ir.Value) (*ir.Value, error)       { return plan.ForwardLSE(g, att) }
func gradOutputs(g *ir.Graph, op *ir.Value) (map[string]*ir.Value, error) {
	return plan.GradOutputs(g, op)
}
func emptyOutputs(g *ir.Graph) bool { return plan.EmptyOutputs(g) }
func AttentionTileVector(d ir.DType, n, off int, strides []int) int {
	return plan.AttentionTileVector(d, n, off, strides)
}
func CheckPersistent(k Kernel) error                  { return plan.CheckPersistent(k) }
func BackwardAttention(g *ir.Graph) (*ir.Value, bool) { return plan.BackwardAttention(g) }
func AttentionAppends(g *ir.Graph) bool               { return plan.AttentionAppends(g) }
func QuantizedMMA(k Kernel) bool                      { return plan.QuantizedMMA(k) }
func LaneSplit(dot *ir.Value) bool                    { return plan.LaneSplit(dot) }
func WarpGroup(n int) int                             { return plan.WarpGroup(n) }

// The persistent template: one block of persistThreads threads runs the kernel's stages in
// order (a chain of small kernels, such as the time steps of a recurrent layer, fused by the
// passes' persist stage). Each stage is lowered as its own kernel would be, with a block-stride
// loop over its elements in place of the grid-stride one: a loop stage computes its elements
// through the kernel graph (views, concats, elementwise ops) in groups of consecutive elements
// with vector accesses when the stage has enough of them to give every thread a group, else one
// element per thread (a recurrence's small steps are its critical path: spreading them keeps it
// short); a contraction stage whose weight rows are contiguous along K has the lanes of a warp
// split K (warpElements: coalesced reads), any other runs the direct template's per-element
// fold; both accumulate f32 products with fma.rn.f32 into an f32 accumulator as the tiled
// template does (the exact f64 accumulation runs at 1/64 of the f32 rate on sm_86 and sm_89,
// and a recurrence runs every step on one SM). A stage reads the kernel's inputs from global
// memory and the values earlier stages left in shared memory, and stores each output to global memory, to its shared slot, or both. bar.sync separates the
// stages: it orders every shared (and global) access of one stage before those of the next, for
// the whole block, so a value is read only after all of it is written, and a slot is reused only
// after its last reader is done.
const persistThreads = plan.PersistThreads
