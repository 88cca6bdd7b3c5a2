package train

import (
	"math"

	"github.com/gcomp/gcomp/tensor"
)

// Data-parallel training of a model over a symbolic batch (frontend.WithMaxBatch) builds each
// rank's step once, as Fit does on one device, and runs every global batch at its own size: an
// epoch's last partial batch is split across the ranks in near-equal contiguous shards, rank k
// taking rows [k·r/W, (k+1)·r/W) of r. Unequal shards make DistributedDataParallel's plain
// average of the ranks' mean gradients wrong, so each rank's gradients are weighted by its share
// of the global batch's mean divisor (the rows, or Σ w[yᵢ] over the labels not ignored of a
// class loss): rank k's gradients graph takes GradWeightName = W·dₖ/Σd as the seed of its loss,
// and the average over the ranks is then the gradient of the single-device mean over the same
// rows, to the order the sums add up in. Where PyTorch's DistributedSampler pads the last batch
// by repeating rows, which count twice, a rank with nothing to count here (fewer rows than ranks,
// or every label of its shard ignored) runs one counted row of the batch with weight 0.
//
// A static batch has equal shards, but a class loss with weights or ignored labels still divides
// each rank's mean by its own Σ w[yᵢ]: its ranks take the same weight, so they too train one
// device's parameters (where DDP's plain average differs), and a static rank with nothing to
// count runs its rows with weight 0 (its loss, 0/0, counts for nothing; its gradients are zero,
// as every label of its rows is ignored: loss.go).

// GradWeightName is the f32[] input of a split step's gradients graph over a symbolic batch, or
// of a class loss with weights or ignored labels: the factor of the rank's loss gradient (its
// seed) that makes the ranks' average the global batch's.
const GradWeightName = "ddp.grad_weight"

// shard is a rank's part of a global batch.
type shard struct {
	lo, hi int     // its rows of the global batch
	rows   int     // the rows it counts in the loss and metrics (0 for a padding row)
	weight float64 // GradWeightName's value
}

// shardOf returns rank k's shard of a global batch of r rows with targets y, of world ranks:
// rows [k·r/W, (k+1)·r/W) (a static step's r is W·B: rows [k·B, (k+1)·B)), and when weighted
// (the gradients graph takes GradWeightName) the weight described above. Over no counted row at
// all (every label ignored) the weight is NaN, as the single-device mean is 0/0.
func shardOf(l Loss, y *tensor.Tensor, r, k, world int, symbolic, weighted bool) shard {
	lo, hi := k*r/world, (k+1)*r/world
	s := shard{lo: lo, hi: hi, rows: hi - lo, weight: 1}
	if !weighted {
		return s
	}
	per := 1
	if y.Type.Shape[0] > 0 {
		per = y.Len() / y.Type.Shape[0]
	}
	div := func(lo, hi int) float64 { return l.weight(shardRows(y, lo, hi), hi-lo, per) }
	var total, mine float64
	for j := range world {
		d := div(j*r/world, (j+1)*r/world)
		total += d
		if j == k {
			mine = d
		}
	}
	s.weight = float64(world) * mine / total
	if symbolic && mine == 0 && (total > 0 || lo == hi) {
		i := 0 // the first counted row, if any
		for j := range r {
			if div(j, j+1) > 0 {
				i = j
				break
			}
		}
		s = shard{lo: i, hi: i + 1, weight: 0}
		if total == 0 {
			s.weight = math.NaN()
		}
	}
	return s
}
