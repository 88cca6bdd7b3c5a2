package splitkv

import (
	"math"

	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

const (
	// MaxL is the most query rows per head the template takes: decoding's one token, or a few
	// speculated ones. Longer queries have enough blocks in the prefill template.
	MaxL = 4
	// MaxRows is the most query rows a block computes (the group of query heads sharing a KV
	// head times L): MaxRows/MaxWarps rows per warp, each holding its q and output in registers
	// (two rows of d = 128 take 48 registers; four spilled).
	MaxRows = 32
	// A block runs between MinWarps and MaxWarps warps, a query row each at a time; every warp
	// loads K and V tiles, so a block of one row still streams with four.
	MinWarps = 4
	MaxWarps = 16
	// A chunk is a multiple of ChunkAlign keys: whole tiles of the kernel's 32 keys.
	ChunkAlign = 32
	// Slack is how far above the least modeled time a split may be to get closer to
	// TargetBlocks (two blocks per SM hide latency the roofline does not see).
	Slack = 1.02
	// SMs is the H100 SXM's count (as the cost model's and the GEMV plan's).
	SMs          = gemv.SMs
	TargetBlocks = 2 * SMs
)

// Plan is the split-KV launch of attention q[B,H,L,E], k[B,KVH,S,E], v[B,KVH,S,Ev]: grid
// (Splits, KVH, B) of 32·Warps-thread blocks, block (x, y, z) computing the Rows = (H/KVH)·L
// query rows of batch entry z that read KV head y, over keys [x·Chunk, min(S, x·Chunk+Chunk)).
// Row r of a block is query head y·Group + r/L, query index r%L; warp w computes rows w,
// w+Warps, … (RowSlots of them).
type Plan struct {
	B, H, KVH, L, S, E, Ev int
	Group, Rows            int
	Splits, Chunk          int
	Warps, RowSlots        int
}

// Of returns the plan of an attention op the split-KV template takes: at most MaxL query rows
// per head, at most MaxRows rows per KV head, a non-empty cache and output, and a grid within
// CUDA's limits.
func Of(att *ir.Value) (Plan, bool) {
	return of(att, New)
}

// OfAnyBatch is Of for an attention op whose batch is known only at launch, anywhere from 1 to
// its bound (a symbolic batch): the plan is ForBatches', its B the bound.
func OfAnyBatch(att *ir.Value) (Plan, bool) {
	return of(att, ForBatches)
}

func of(att *ir.Value, plan func(b, h, kvh, l, s, e, ev, size int) Plan) (Plan, bool) {
	if att.Op != ops.AttentionOp || len(att.Args) < 3 {
		return Plan{}, false
	}
	q, k, v := att.Args[0].Type.Shape, att.Args[1].Type.Shape, att.Args[2].Type.Shape
	if len(q) != 4 || len(k) != 4 || len(v) != 4 {
		return Plan{}, false
	}
	b, h, l, e := q[0], q[1], q[2], q[3]
	kvh, s, ev := k[1], k[2], v[3]
	if b < 1 || b > 65535 || kvh < 1 || kvh > 65535 || h%kvh != 0 || l < 1 || l > MaxL ||
		(h/kvh)*l > MaxRows || s < 1 || e < 1 || ev < 1 {
		return Plan{}, false
	}
	return plan(b, h, kvh, l, s, e, ev, att.Args[0].Type.DType.Size()), true
}

// New plans the split of an attention of the given sizes (KVH divides H) whose elements have
// size bytes. The split minimizes the cost model's time for the launch, K and V's bytes plus the
// partials' (a row's Ev+2 floats per chunk written, read back and zeroed), divided by the share
// of the SMs its blocks occupy; among splits within Slack of the least, the one with the most
// blocks up to TargetBlocks. Deterministic: the same sizes give the same plan.
func New(b, h, kvh, l, s, e, ev, size int) Plan {
	p := newPlan(b, h, kvh, l, s, e, ev)
	heads := b * kvh
	p.split(heads, func(n int) float64 { return p.cost(heads, n, size) })
	return p
}

// ForBatches plans the split of an attention whose batch is any of 1 to b, fixed when it is
// built (a symbolic batch: the grid's z is the run's batch, the chunk an immediate). A split
// that suits the bound leaves most SMs idle at batch 1 (GPT-2 small's 12 heads over 1024 keys:
// 2 splits at batch 8, 16 at batch 1), and one that suits batch 1 only adds partials at the
// bound, so the split is the one whose worst time over the batches, relative to the best split
// at each batch, is least; among splits within Slack of that, the one with the most blocks at
// batch 1 up to TargetBlocks, as New. At b = 1 it is New's split up to rounding.
func ForBatches(b, h, kvh, l, s, e, ev, size int) Plan {
	p := newPlan(b, h, kvh, l, s, e, ev)
	cands := candidates(s, kvh) // batch 1's: a superset of every larger batch's
	best := make([]float64, b+1)
	for bb := 1; bb <= b; bb++ {
		best[bb] = math.Inf(1)
		for _, n := range cands {
			best[bb] = min(best[bb], p.cost(bb*kvh, n, size))
		}
	}
	p.split(kvh, func(n int) float64 {
		worst := 0.0
		for bb := 1; bb <= b; bb++ {
			worst = max(worst, p.cost(bb*kvh, n, size)/best[bb])
		}
		return worst
	})
	return p
}

func newPlan(b, h, kvh, l, s, e, ev int) Plan {
	p := Plan{B: b, H: h, KVH: kvh, L: l, S: s, E: e, Ev: ev, Group: h / kvh}
	p.Rows = p.Group * l
	p.Warps = min(MaxWarps, max(MinWarps, p.Rows))
	p.RowSlots = ceilDiv(p.Rows, p.Warps)
	return p
}

// cost is the modeled time of a launch over heads (batch entry, KV head) pairs in n splits.
func (p Plan) cost(heads, n, size int) float64 {
	bytes := float64(heads) * float64(p.S) * float64((p.E+p.Ev)*size)
	if n > 1 {
		bytes += float64(heads*n*p.Rows) * float64(12*(p.Ev+2))
	}
	return bytes / min(1, float64(heads*n)/SMs)
}

// candidates are the splits into whole chunks up to TargetBlocks blocks over heads (past the
// SMs' count more splits only add partials), as the chunk size makes them.
func candidates(s, heads int) []int {
	var splits []int
	for n := 1; n <= max(1, min(ceilDiv(s, ChunkAlign), ceilDiv(TargetBlocks, heads))); n++ {
		splits = append(splits, ceilDiv(s, roundUp(ceilDiv(s, n), ChunkAlign)))
	}
	return splits
}

// split sets the chunk from the candidates over heads: the least cost, then within Slack of it
// the most blocks up to TargetBlocks.
func (p *Plan) split(heads int, cost func(n int) float64) {
	splits := candidates(p.S, heads)
	costs := map[int]float64{}
	for _, n := range splits {
		if _, ok := costs[n]; !ok {
			costs[n] = cost(n)
		}
	}
	best := 1
	for _, n := range splits {
		if costs[n] < costs[best] {
			best = n
		}
	}
	pick := best
	for _, n := range splits {
		if costs[n] <= Slack*costs[best] && n > pick && heads*n <= max(TargetBlocks, heads*best) {
			pick = n
		}
	}
	p.Chunk = roundUp(ceilDiv(p.S, pick), ChunkAlign)
	p.Splits = ceilDiv(p.S, p.Chunk)
}

// Grid is the launch's grid.
func (p Plan) Grid() [3]int { return [3]int{p.Splits, p.KVH, p.B} }

// Threads is the block's size.
func (p Plan) Threads() int { return 32 * p.Warps }

// Blocks is the number of blocks launched.
func (p Plan) Blocks() int { return p.Splits * p.KVH * p.B }

// PartialStride is the floats of one row's partial: its maximum, its sum, then Ev outputs.
func (p Plan) PartialStride() int { return p.Ev + 2 }

// PartialFloats is how many f32 partials a split launch keeps in scratch, laid out
// [batch][KV head][split][row][max, sum, outputs]. 0 without a split.
func (p Plan) PartialFloats() int {
	if p.Splits == 1 {
		return 0
	}
	return p.Blocks() * p.Rows * p.PartialStride()
}

// ScratchBytes is the zeroed scratch a launch needs: the partials, then one u32 ticket counter
// per (batch entry, KV head), rounded to 8 bytes. 0 without a split.
func (p Plan) ScratchBytes() int {
	if p.Splits == 1 {
		return 0
	}
	return roundUp(4*p.PartialFloats()+4*p.B*p.KVH, 8)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }
