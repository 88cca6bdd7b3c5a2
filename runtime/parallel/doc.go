// Package parallel runs a compiled model data-parallel over several devices, as PyTorch's
// nn.DataParallel runs its forward pass: the model is compiled once at the per-device batch B/N,
// loaded on each of the N devices with the same parameters, every input that carries the batch is
// cut into N equal shards along its batch dim (the others are given whole to every device), the
// shards run concurrently (one goroutine per device), and the outputs are concatenated along
// their batch dims in device order, so that the result is the single-device run's at batch B.
//
// Which dim of an input or output carries the batch is read from the model's two graphs, traced
// at B and at B/N (package load's Options.Batch): the one dim that is N times larger at B. A dim
// that merges the batch with other dims (x.View(-1, C) of [B, T, C] gives [B·T, C]) is split and
// concatenated in contiguous blocks, which is right when the batch is its outermost part, as it
// is for a view of a batch-first tensor.
package parallel
