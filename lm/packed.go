package lm

import (
	"fmt"
	"slices"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/tensor"
)

// A packed engine (EngineOptions.Packed) builds its decode program once over a symbolic batch in
// [1, Batch] (frontend.WithMaxBatch; docs/dynamic.md "Max batch") and runs it at the number of
// sequences given: Decode(tokens, pos) with n = len(tokens) rows decodes slots [0, n), rows
// [0, n) of the static KV cache, and leaves the others untouched. The cache's batch leads its
// layout, so a run at n reads and writes a contiguous prefix of every layer's keys and values,
// and its split-KV attention's grid covers n rows only: a step costs what its active rows cost
// in attention and the KV write. A server keeps its active sequences in that prefix: when one
// leaves, MoveSlot copies the last active sequence's cache rows into the freed slot.

// decodeGraph builds the decode program: at the static batch, or over the symbolic one.
func (e *Engine) decodeGraph() (*ir.Graph, error) {
	if !e.packed {
		return e.m.graph("decode", func(b *frontend.Builder) { e.m.arch.decode(b, e.batch) })
	}
	return e.m.packedDecode(e.batch)
}

// packedDecode builds the decode program over the dim batch in [1, slots].
func (m *Model) packedDecode(slots int) (*ir.Graph, error) {
	return m.graph("decode", func(b *frontend.Builder) { m.arch.decode(b, b.Batch(slots)) },
		frontend.WithMaxBatch(slots))
}

// PackedDecodeGraph builds a packed engine's decode program for a model of c without its
// weights (gcomp dump --program decode --max-batch N): over the dim batch in [1, slots].
func PackedDecodeGraph(c Config, slots int) (*ir.Graph, error) {
	a, err := archOf(c)
	if err != nil {
		return nil, err
	}
	if slots < 1 || slots > MaxBatch {
		return nil, fmt.Errorf("lm: %d slots: want 1 to %d", slots, MaxBatch)
	}
	return (&Model{Config: c, arch: a}).packedDecode(slots)
}

// Packed says whether Decode takes fewer rows than Batch (EngineOptions.Packed).
func (e *Engine) Packed() bool { return e.packed }

// checkRows checks a decode's row count: the batch, or for a packed engine 1 to the batch.
func (e *Engine) checkRows(tokens, pos int) error {
	switch {
	case tokens != pos:
		return fmt.Errorf("lm: decode takes one token and one position per sequence: %d tokens, %d positions", tokens, pos)
	case e.packed && (tokens < 1 || tokens > e.batch):
		return fmt.Errorf("lm: a packed decode of %d sequences: the engine decodes 1 to %d", tokens, e.batch)
	case !e.packed && tokens != e.batch:
		return fmt.Errorf("lm: decode takes one token and one position per sequence: %d tokens, %d positions for a batch of %d", tokens, pos, e.batch)
	}
	return nil
}

// cacheRows is ref's cache input name at n rows: the first n sequences' rows, shared with the
// cache (the batch leads, so they are a prefix of its elements).
func (e *Engine) cacheRows(name string, n int) *tensor.Tensor {
	c := e.cache[name]
	if n == c.Type.Shape[0] {
		return c
	}
	t := *c
	t.Type.Shape = append([]int{n}, c.Type.Shape[1:]...)
	t.F = c.F[:len(c.F)/c.Type.Shape[0]*n]
	return &t
}

// setCacheRows stores ref's new cache rows out (the first rows of the cache name).
func (e *Engine) setCacheRows(name string, out *tensor.Tensor) {
	c := e.cache[name]
	if out.Type.Equal(c.Type) {
		e.cache[name] = out
		return
	}
	copy(c.F, out.F)
}

// MoveSlot copies sequence src's KV cache rows (keys and values of every layer) into slot dst,
// on the device where the engine runs (a device-to-device copy where the device has one), and
// returns the bytes copied. The sequence's position is the caller's: it continues in dst at the
// position it had in src. src's rows are left as they were.
func (e *Engine) MoveSlot(dst, src int) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return 0, err
	}
	if dst < 0 || dst >= e.batch || src < 0 || src >= e.batch {
		return 0, fmt.Errorf("lm: moving slot %d to slot %d: the engine has slots 0 to %d", src, dst, e.batch-1)
	}
	if dst == src {
		return 0, nil
	}
	var moved int64
	for _, name := range sortedValues(e.m.cacheStates()) {
		if e.dev == nil {
			c := e.cache[name]
			row := len(c.F) / e.batch
			copy(c.F[dst*row:(dst+1)*row], c.F[src*row:(src+1)*row])
			moved += int64(row * c.Type.DType.Size())
			continue
		}
		ptr, typ, err := e.decode.prog.Buffer(name)
		if err != nil {
			return moved, fmt.Errorf("lm: moving slot %d to slot %d: %v", src, dst, err)
		}
		row := int64(typ.Bytes() / e.batch)
		if err := executor.CopyDevice(e.dev, ptr+executor.Ptr(int64(dst)*row), ptr+executor.Ptr(int64(src)*row), row); err != nil {
			return moved, fmt.Errorf("lm: moving slot %d to slot %d on %s: %v", src, dst, e.name, err)
		}
		moved += row
	}
	return moved, nil
}

// sortedValues returns m's values in sorted order (a deterministic copy order).
func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}
