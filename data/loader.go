package data

import (
	"fmt"
	"iter"
	"math/bits"
	"math/rand/v2"
	"sync"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Loader hands out a dataset in batches, epoch by epoch, like PyTorch's DataLoader. A background
// goroutine prepares the next batches while the caller works on the current one.
type Loader struct {
	Data Dataset
	// Batch is the number of examples per batch (required, ≥ 1).
	Batch int
	// Shuffle visits the examples in a new random order every epoch, a function of (Seed, epoch)
	// only (see Order); without it every epoch goes in dataset order.
	Shuffle bool
	Seed    uint64
	// DropLast drops a last batch smaller than Batch; without it the last batch is smaller.
	DropLast bool
	// Flatten gives each row's input as one dimension, X as [B, H*W] for images f32[B,1,H,W]
	// (for a multilayer perceptron).
	Flatten bool
	// Prefetch is how many prepared batches may wait for the caller (default 2). The goroutine
	// works on at most one more.
	Prefetch int
	// NoWorker prepares each batch in the caller's goroutine when the caller asks for it, with no
	// prefetch goroutine (DataLoader's num_workers=0): the same batches, in the same order.
	NoWorker bool
	// Prepare, when set, runs on each batch in the prefetch goroutine, in batch order, before the
	// batch is handed out: the place for the device side of DataLoader(pin_memory=True) with
	// non_blocking copies, e.g. copying X and Y into pinned host memory and starting an
	// asynchronous upload whose handle goes into Batch.Device. An error ends the epoch with that
	// error.
	Prepare func(*Batch) error
}

// Batch is one batch. Each is freshly allocated and belongs to the caller once handed out.
type Batch struct {
	Epoch, Index int            // which epoch, and the batch's number in it (from 0)
	Indices      []int          // the dataset rows in the batch, in order
	X            *tensor.Tensor // the rows' inputs (images: f32[B,1,H,W], or f32[B,H*W] with Flatten)
	Y            *tensor.Tensor // the rows' targets (images: the labels i64[B])
	Device       any            // for Prepare: the batch's device-side copies
}

// Len is the number of batches per epoch.
func (l *Loader) Len() int {
	if l.Batch <= 0 {
		return 0
	}
	if l.DropLast {
		return l.Data.Len() / l.Batch
	}
	return (l.Data.Len() + l.Batch - 1) / l.Batch
}

// Order is the order in which epoch visits the rows: 0, 1, …, N-1 without Shuffle, else a
// permutation that depends on (Seed, epoch) alone and is the same on every machine and Go
// version. The generator is PCG-DXSM (math/rand/v2's PCG) seeded with (Seed, epoch); the
// permutation is a Fisher–Yates shuffle of the identity that, for i from N-1 down to 1, swaps
// element i with element j = ⌊u·(i+1) / 2⁶⁴⌋ where u is the generator's next Uint64.
func (l *Loader) Order(epoch int) []int {
	order := make([]int, l.Data.Len())
	for i := range order {
		order[i] = i
	}
	if !l.Shuffle {
		return order
	}
	rng := rand.NewPCG(l.Seed, uint64(epoch))
	for i := len(order) - 1; i > 0; i-- {
		j, _ := bits.Mul64(rng.Uint64(), uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// Epoch returns the batches of one epoch, in order. Breaking out of the loop stops the prefetch
// goroutine and waits for it, so nothing runs after the loop ends:
//
//	for b, err := range loader.Epoch(epoch) {
//		if err != nil {
//			return err
//		}
//		loss := step(b.X, b.Y)
//	}
//
// After an error the sequence ends.
func (l *Loader) Epoch(epoch int) iter.Seq2[*Batch, error] {
	return func(yield func(*Batch, error) bool) {
		if err := l.check(); err != nil {
			yield(nil, err)
			return
		}
		order := l.Order(epoch)
		n := l.Len()
		prepare := func(i int) (*Batch, error) {
			b, err := l.batch(epoch, i, order[i*l.Batch:min((i+1)*l.Batch, len(order))])
			if err != nil {
				return nil, err
			}
			if l.Prepare != nil {
				if err := l.Prepare(b); err != nil {
					return nil, fmt.Errorf("data: %s: epoch %d, batch %d: %w", Name(l.Data), epoch, i, err)
				}
			}
			return b, nil
		}
		if l.NoWorker {
			for i := range n {
				b, err := prepare(i)
				if !yield(b, err) || err != nil {
					return
				}
			}
			return
		}
		prefetch := l.Prefetch
		if prefetch <= 0 {
			prefetch = 2
		}
		type result struct {
			b   *Batch
			err error
		}
		ready := make(chan result, prefetch)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer func() {
			close(stop)
			wg.Wait()
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(ready)
			for i := range n {
				b, err := prepare(i)
				select {
				case ready <- result{b, err}:
				case <-stop:
					return
				}
				if err != nil {
					return
				}
			}
		}()
		for r := range ready {
			if !yield(r.b, r.err) || r.err != nil {
				return
			}
		}
	}
}

func (l *Loader) check() error {
	if l.Data == nil {
		return fmt.Errorf("data: loader has no dataset")
	}
	if l.Batch <= 0 {
		return fmt.Errorf("data: %s: batch size %d, want at least 1", Name(l.Data), l.Batch)
	}
	return nil
}

// batch gathers the rows into a new batch.
func (l *Loader) batch(epoch, index int, rows []int) (*Batch, error) {
	x, y, err := ReadRows(l.Data, rows)
	if err != nil {
		return nil, err
	}
	if l.Flatten && x.Type.Shape.Rank() > 2 {
		x.Type = ir.T(x.Type.DType, len(rows), x.Len()/max(len(rows), 1))
	}
	return &Batch{Epoch: epoch, Index: index, Indices: append([]int(nil), rows...), X: x, Y: y}, nil
}
