package tensor

import "sync"

// The buffer pool. A reference run frees each intermediate after its last use (Recycle) and the
// next New of the same length takes that buffer instead of fresh memory from the Go heap. A
// training step on the reference device allocates the same sizes every step; without the pool,
// every step's megabytes of intermediates are new pages for the kernel to fault in and zero and for
// the collector to sweep, which cost as much as the arithmetic (BenchmarkMLPStepRef in train).
var pool = struct {
	sync.Mutex
	f     map[int][][]float64
	i     map[int][][]int64
	bytes int64
}{f: map[int][][]float64{}, i: map[int][][]int64{}}

// poolLimit bounds the bytes kept: Recycle drops buffers beyond it. A step's intermediates of one
// size at a time fit; 256 MiB held buffers of sizes no later step asked for, and the Fashion-MNIST
// CNN's training ran at 1.5 GB resident instead of 0.9 (and no faster).
const (
	minPooled = 1 << 10  // smaller buffers are cheap to allocate
	poolLimit = 64 << 20 // bytes kept at most
)

// takeF returns a pooled buffer of n floats (zeroed if zero), or nil.
func takeF(n int, zero bool) []float64 { return take(pool.f, n, zero) }

// takeI is takeF for integer buffers.
func takeI(n int, zero bool) []int64 { return take(pool.i, n, zero) }

func take[E float64 | int64](bufs map[int][][]E, n int, zero bool) []E {
	if n < minPooled {
		return nil
	}
	pool.Lock()
	free := bufs[n]
	if len(free) == 0 {
		pool.Unlock()
		return nil
	}
	b := free[len(free)-1]
	bufs[n] = free[:len(free)-1]
	pool.bytes -= int64(8 * n)
	pool.Unlock()
	if zero {
		clear(b)
	}
	return b
}

// Recycle gives x's buffer to the pool for a later New and empties x (its F and I become nil, so
// that a use after Recycle fails loudly instead of reading another tensor's values). Call it only
// on a tensor nothing else refers to, such as an interpreter's dead intermediate.
func Recycle(x *Tensor) {
	f, i := x.F, x.I
	x.F, x.I = nil, nil
	n := max(len(f), len(i))
	if n < minPooled {
		return
	}
	pool.Lock()
	defer pool.Unlock()
	if pool.bytes+int64(8*n) > poolLimit {
		return
	}
	pool.bytes += int64(8 * n)
	if f != nil {
		pool.f[n] = append(pool.f[n], f[:n:n])
		return
	}
	pool.i[n] = append(pool.i[n], i[:n:n])
}
