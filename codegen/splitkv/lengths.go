package splitkv

import (
	"math"

	"github.com/gcomp/gcomp/ir"
)

// OfAnyLength is Of for an attention op whose key length is known only at launch, anywhere from
// 1 to its bound (a symbolic cache length), over a batch of any size up to its bound when
// anyBatch: the plan is ForLengths', its S the bound.
func OfAnyLength(att *ir.Value, anyBatch bool) (Plan, bool) {
	return of(att, func(b, h, kvh, l, s, e, ev, size int) Plan {
		return ForLengths(b, anyBatch, h, kvh, l, s, e, ev, size)
	})
}

// ForLengths plans the split of an attention whose key length is any of 1 to s, fixed when it is
// built: the chunk is an immediate, and a run of length t takes ⌈t/Chunk⌉ chunks. A generation
// steps through every length, so the chunk is the one whose time summed over the lengths
// s/16, 2s/16, …, s (the steps of a generation up to the bound), relative to the sum of each
// length's best split, is least (over a symbolic batch, the worst of that over batches 1 to b);
// among chunks within Slack of it, the smallest whose blocks at the bound stay within
// TargetBlocks (as New's). The bound's own split leaves SMs idle at short lengths (GPT-2 small at
// S 1024: 16 chunks of 64, so 96 blocks at 512); the finest only adds partials at the bound.
// Splits is the bound's chunk count (the scratch's layout).
func ForLengths(b int, anyBatch bool, h, kvh, l, s, e, ev, size int) Plan {
	p := newPlan(b, h, kvh, l, s, e, ev)
	var lengths []int
	for i := 1; i <= lengthSteps; i++ {
		if t := ceilDiv(s*i, lengthSteps); len(lengths) == 0 || lengths[len(lengths)-1] != t {
			lengths = append(lengths, t)
		}
	}
	batches := []int{b}
	if anyBatch {
		batches = batches[:0]
		for bb := 1; bb <= b; bb++ {
			batches = append(batches, bb)
		}
	}
	best := make([]float64, len(batches)) // Σ over the lengths of each one's best
	for i, bb := range batches {
		for _, t := range lengths {
			x := math.Inf(1)
			for _, n := range candidates(t, bb*kvh) {
				x = min(x, p.costAt(bb*kvh, n, t, size))
			}
			best[i] += x
		}
	}
	// The chunks: every aligned size up to the bound's, at most 4096 chunks at the bound.
	var chunks []int
	for n := 1; n <= min(ceilDiv(s, ChunkAlign), 4096); n++ {
		if c := roundUp(ceilDiv(s, n), ChunkAlign); len(chunks) == 0 || chunks[len(chunks)-1] != c {
			chunks = append(chunks, c)
		}
	}
	worst := make([]float64, len(chunks))
	least := 0
	for j, c := range chunks {
		for i, bb := range batches {
			sum := 0.0
			for _, t := range lengths {
				sum += p.costAt(bb*kvh, ceilDiv(t, c), t, size)
			}
			worst[j] = max(worst[j], sum/best[i])
		}
		if worst[j] < worst[least] {
			least = j
		}
	}
	pick, heads := least, batches[0]*kvh
	for j, c := range chunks { // decreasing sizes
		if worst[j] <= Slack*worst[least] && heads*ceilDiv(s, c) <= max(TargetBlocks, heads*ceilDiv(s, chunks[least])) {
			pick = j
		}
	}
	p.Chunk = chunks[pick]
	p.Splits = ceilDiv(s, p.Chunk)
	return p
}

// lengthSteps is how many lengths ForLengths weighs, evenly spaced up to the bound.
const lengthSteps = 16

// costAt is cost at key length t.
func (p Plan) costAt(heads, n, t, size int) float64 {
	q := p
	q.S = t
	return q.cost(heads, n, size)
}
