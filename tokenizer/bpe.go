package tokenizer

// BPE merges adjacent symbols by priority until no pair merges: by the rank of a merges list
// (Hugging Face's BPE model, GPT-2's merges.txt) or by the score of the merged piece
// (SentencePiece's BPE, which has scores and no merges). Ties go to the leftmost pair, as in
// both reference implementations. Symbols form a linked list and candidate pairs a heap, so a
// long word costs O(n log n), not the O(n²) of rescanning for the best pair.

// merge is what a pair of ids becomes.
type merge struct {
	rank int32
	id   int32
}

type symbol struct {
	id         int
	prev, next int // indexes in the symbol slice, -1 at the ends
	dead       bool
}

type candidate struct {
	pri         float64
	left, right int // symbol indexes
	lid, rid    int // their ids when the candidate was made
	id          int // the merged id
}

// candidates is a binary min-heap, typed so pushes and pops do not allocate.
type candidates []candidate

func (c candidates) less(i, j int) bool {
	if c[i].pri != c[j].pri {
		return c[i].pri < c[j].pri
	}
	return c[i].left < c[j].left
}

func (c *candidates) push(x candidate) {
	*c = append(*c, x)
	h := *c
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (c *candidates) pop() candidate {
	h := *c
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*c = h
	return top
}

// pairFunc says whether ids a and b merge, into which id, with which priority (lower first).
type pairFunc func(a, b int) (id int, pri float64, ok bool)

// bpe merges ids (the initial symbols of one word) and appends the result to out.
func bpe(ids []int, pair pairFunc, out []int) []int {
	if len(ids) < 2 {
		return append(out, ids...)
	}
	syms := make([]symbol, len(ids))
	for i, id := range ids {
		syms[i] = symbol{id: id, prev: i - 1, next: i + 1}
	}
	syms[len(syms)-1].next = -1
	q := make(candidates, 0, len(ids))
	push := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		if id, pri, ok := pair(syms[l].id, syms[r].id); ok {
			q.push(candidate{pri: pri, left: l, right: r, lid: syms[l].id, rid: syms[r].id, id: id})
		}
	}
	for i := 0; i+1 < len(syms); i++ {
		push(i, i+1)
	}
	for len(q) > 0 {
		c := q.pop()
		l, r := &syms[c.left], &syms[c.right]
		if l.dead || r.dead || l.next != c.right || l.id != c.lid || r.id != c.rid {
			continue // stale: one side merged since
		}
		l.id = c.id
		r.dead = true
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = c.left
		}
		push(l.prev, c.left)
		push(c.left, l.next)
	}
	for i := 0; i >= 0; i = syms[i].next {
		out = append(out, syms[i].id)
	}
	return out
}
