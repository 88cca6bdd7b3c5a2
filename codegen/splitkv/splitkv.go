package splitkv

import (
	"github.com/gcomp/gcomp/codegen/gemv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

const (
	// MaxL is the most query rows per head the template takes: decoding's one token, or a few
	// speculated ones. Longer queries have enough blocks in the prefill template.
	MaxL = 4
	// MaxRows is the most query rows a block computes (the group of query heads sharing a KV
	// head times L): MaxRows/MaxWarps rows per warp, each holding its q and output in registers.
	MaxRows = 32
	// A block runs between MinWarps and MaxWarps warps, a query row each at a time; every warp
	// loads K and V tiles, so a block of one row still streams with four.
	MinWarps = 4
	MaxWarps = 8
	// A chunk is a multiple of ChunkAlign keys (whole tiles of the kernel's 32 keys) and at least
	// MinChunk, so a block's K and V traffic stays well above its partials' (a row's Ev+2 floats
	// written, read back and zeroed).
	ChunkAlign = 32
	MinChunk   = 64
	// SMs is the H100 SXM's count the split aims to fill (as the cost model and the GEMV plan):
	// chunks are cut until there are TargetBlocks, two per SM.
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
	return New(b, h, kvh, l, s, e, ev), true
}

// New plans the split of an attention of the given sizes (KVH divides H).
func New(b, h, kvh, l, s, e, ev int) Plan {
	p := Plan{B: b, H: h, KVH: kvh, L: l, S: s, E: e, Ev: ev, Group: h / kvh}
	p.Rows = p.Group * l
	splits := 1
	if heads := b * kvh; heads < TargetBlocks {
		splits = max(1, min(ceilDiv(TargetBlocks, heads), s/MinChunk))
	}
	p.Chunk = roundUp(ceilDiv(s, splits), ChunkAlign)
	p.Splits = ceilDiv(s, p.Chunk)
	p.Warps = min(MaxWarps, max(MinWarps, p.Rows))
	p.RowSlots = ceilDiv(p.Rows, p.Warps)
	return p
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
