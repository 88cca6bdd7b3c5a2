package lm

import (
	"context"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/tensor"
)

// A packed engine's decode at n of its slots gives the logits the static decode of all slots
// gives those rows, at every n, on the tiny GPT-2 and Llama checkpoints: the static engine runs
// every row each step, a row outside the packed run re-decoding its last token at its last
// position (which rewrites the same cache entry), so both engines' caches hold the same
// histories. Midway, the packed engine's slot 3 sequence moves into its slot 1 (MoveSlot) and
// goes on there; in the static engine it stays in slot 3, and the packed slot 1's logits are
// compared with the static slot 3's. On ref the two graphs compute the same ops, so the logits
// are bit-identical; on the simulator the symbolic split-KV attention differs from the static
// kernels in rounding only.
func TestPackedDecodeEqualsStatic(t *testing.T) {
	r := reference(t)
	const B = 4
	ns := []int{2, 4, 1, 3, 3, 2} // active rows per step
	const moveAt = 4              // before step 4: slot 3's sequence moves to slot 1
	ctx := context.Background()
	for ci := range r.Cases {
		c := &r.Cases[ci]
		m := testModel(t, c)
		for _, dev := range []string{"ref", "sim"} {
			if dev == "sim" && c.Name != "gpt2" && c.Name != "llama" {
				continue // the simulator's time goes to the two architectures
			}
			t.Run(c.Name+"/"+dev, func(t *testing.T) {
				static, err := m.Open(EngineOptions{Device: dev, Batch: B, NoSimChecks: true})
				if err != nil {
					t.Fatal(err)
				}
				defer static.Close()
				packed, err := m.Open(EngineOptions{Device: dev, Batch: B, Packed: true})
				if err != nil {
					t.Fatal(err)
				}
				defer packed.Close()
				if !packed.Packed() || static.Packed() {
					t.Fatal("Packed() does not say how the engines were opened")
				}
				hist := make([][]int, B)  // tokens each static slot's sequence has decoded, at positions 0, 1, ...
				slot := []int{0, 1, 2, 3} // packed slot → the static slot of its sequence
				// Both start with a prefill of two tokens a slot (the static prefill program, in
				// place in the packed engine's cache too).
				for s := range B {
					hist[s] = []int{(7*s + 1) % m.Vocab, (7*s + 14) % m.Vocab}
				}
				want, err := static.Prefill(ctx, hist)
				if err != nil {
					t.Fatal(err)
				}
				got, err := packed.Prefill(ctx, hist)
				if err != nil {
					t.Fatal(err)
				}
				for s := range B {
					if !slices.Equal(got[s], want[s]) {
						t.Fatalf("prefill, slot %d: the packed engine's logits differ from the static one's", s)
					}
				}
				for step, n := range ns {
					if step == moveAt {
						moved, err := packed.MoveSlot(1, 3)
						if err != nil {
							t.Fatal(err)
						}
						if want := int64(2 * m.Layers * m.cacheType(1).Bytes()); moved != want {
							t.Fatalf("MoveSlot moved %d bytes, want %d (keys and values of every layer)", moved, want)
						}
						slot[1], slot[3] = 3, -1
					}
					active := map[int]bool{}
					for p := range n {
						active[slot[p]] = true
					}
					toks, pos := make([]int, B), make([]int, B)
					for s := range B {
						k := len(hist[s])
						if !active[s] {
							// Held: the last decode again (or, before any, the first one's).
							k = max(k-1, 0)
						}
						toks[s], pos[s] = (7*s+13*k+1)%m.Vocab, k
					}
					want, err := static.Decode(ctx, toks, pos)
					if err != nil {
						t.Fatal(err)
					}
					ptoks, ppos := make([]int, n), make([]int, n)
					for p := range n {
						ptoks[p], ppos[p] = toks[slot[p]], pos[slot[p]]
					}
					got, err := packed.Decode(ctx, ptoks, ppos)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != n {
						t.Fatalf("step %d: %d rows of logits for a decode of %d", step, len(got), n)
					}
					for p := range n {
						s := slot[p]
						hist[s] = append(hist[s], toks[s])
						for i := range want[s] {
							d := got[p][i] - want[s][i]
							if dev == "ref" && d != 0 || d > 1e-5 || d < -1e-5 {
								t.Fatalf("step %d (%d rows), packed slot %d: logit %d is %v, static slot %d's %v", step, n, p, i, got[p][i], s, want[s][i])
							}
						}
					}
				}
			})
		}
	}
}

// A packed engine refuses a decode of no rows or more than its slots, and MoveSlot a slot it
// does not have; a static engine still takes exactly its batch.
func TestPackedDecodeErrors(t *testing.T) {
	r := reference(t)
	m := testModel(t, &r.Cases[0])
	ctx := context.Background()
	packed, err := m.Open(EngineOptions{Device: "ref", Batch: 2, Packed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer packed.Close()
	static, err := m.Open(EngineOptions{Device: "ref", Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer static.Close()
	for _, c := range []struct {
		name       string
		e          *Engine
		tokens, ps []int
	}{
		{"packed, no rows", packed, nil, nil},
		{"packed, over the slots", packed, []int{1, 2, 3}, []int{0, 0, 0}},
		{"packed, tokens and positions disagree", packed, []int{1}, []int{0, 0}},
		{"static, fewer rows", static, []int{1}, []int{0}},
	} {
		if _, err := c.e.Decode(ctx, c.tokens, c.ps); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	for _, mv := range [][2]int{{-1, 0}, {0, 2}, {2, 1}} {
		if _, err := packed.MoveSlot(mv[0], mv[1]); err == nil {
			t.Errorf("MoveSlot(%d, %d): no error", mv[0], mv[1])
		}
	}
	if n, err := packed.MoveSlot(1, 1); err != nil || n != 0 {
		t.Errorf("MoveSlot(1, 1) = %d, %v: want nothing moved", n, err)
	}
}

// warpInsts is the simulator's warp instructions of one decode step of e at the first n slots.
func warpInsts(t *testing.T, e *Engine, n int) int64 {
	t.Helper()
	in := map[string]*tensor.Tensor{inTokens: intTensor(make([]int, n), n, 1), inPos: intTensor(make([]int, n), n)}
	res, err := e.decode.prog.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, k := range res.Kernels {
		if k.Counters != nil {
			sum += k.Counters.WarpInsts
		}
	}
	return sum
}

// A packed step at 2 of 8 slots executes what a static step of 2 does in attention and the KV
// write, far less than the static step of 8 the server ran before: the simulator's warp
// instructions of one step of the test Llama (docs/perf.md).
func TestPackedDecodeWarpInsts(t *testing.T) {
	r := reference(t)
	m := testModel(t, &r.Cases[1]) // llama
	open := func(batch int, packed bool) *Engine {
		e, err := m.Open(EngineOptions{Device: "sim", Batch: batch, Packed: packed, NoSimChecks: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	static8, packed8, static2 := warpInsts(t, open(8, false), 8), warpInsts(t, open(8, true), 2), warpInsts(t, open(2, false), 2)
	t.Logf("warp instructions of one step: static 8 slots %d, packed at 2 of 8 %d, static 2 slots %d", static8, packed8, static2)
	if packed8 >= static8 {
		t.Errorf("a packed step at 2 of 8 slots runs %d warp instructions, the static step of 8 %d", packed8, static8)
	}
}
