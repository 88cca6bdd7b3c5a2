// Package splitkv decides the shape of the split-KV attention template (flash-decoding): an
// attention op with a few query rows against a long KV cache, as a decoding step computes it.
// The FlashAttention-style template runs a block per four query rows of a head, so one decoded
// token of GPT-2 small (12 heads) launches 12 blocks on a 132-SM GPU; this one cuts the cache
// into Splits chunks and runs a block per (batch entry, KV head, chunk).
//
// A block computes every query row that reads its KV head (the group of H/KVH query heads times
// L rows; grouped- and multi-query attention read K and V once for the group, without copying
// them) over its chunk of keys: a partial maximum, sum and unnormalized output per row, written
// to scratch. The last block of a (batch entry, KV head) to finish (an integer ticket) rescales
// and sums the chunks' partials in chunk order: deterministic, no float atomics, and one launch
// rather than a second combining kernel (a launch costs more than the whole
// combination's traffic). Chunks past the last visible key (position and causal masks) load
// nothing and publish an empty partial.
//
// A step built once for every batch up to a bound (a symbolic batch: the grid's z is the run's
// batch) fixes its split when it is built: ForBatches (OfAnyBatch) takes the one whose worst
// time over the batches, relative to each batch's best, is least.
//
// The decisions live here, apart from the code that emits the kernel, because two packages must
// agree on them: codegen/ptx generates the kernel from the Plan, and the passes' cost model
// counts its blocks and scratch traffic from the same Plan.
//
//	p, ok := splitkv.Of(att) // q[1,32,1,128], k and v [1,32,4096,128], f16
//	// p.Splits = 8, p.Chunk = 512: 256 blocks of 128 threads
package splitkv
