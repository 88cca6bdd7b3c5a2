package tokenizer

import (
	"math"
	"unicode/utf8"
)

// unkPenalty is how much less likely than the least likely piece an unknown character is
// (SentencePiece's kUnkPenalty).
const unkPenalty = 10

// setUnkScore sets the score of an unknown character from the least likely piece's.
func (m *model) setUnkScore() {
	lowest := float32(math.Inf(1))
	for _, s := range m.scores {
		lowest = min(lowest, s)
	}
	m.unkScore = float64(lowest) - unkPenalty
}

// viterbi appends the ids of w's most likely segmentation into pieces of a unigram model: the
// path through the lattice of vocabulary pieces with the highest sum of scores. A character no
// piece covers is unknown (its bytes with byte fallback).
func (m *model) viterbi(w string, out []int) ([]int, error) {
	type node struct {
		score float64
		start int // byte where the last piece starts
		id    int // its id, or -1 for an unknown character
	}
	best := make([]node, len(w)+1)
	for i := 1; i <= len(w); i++ {
		best[i].score = math.Inf(-1)
	}
	// Every character boundary is reached (at worst through unknown characters), in order.
	for start := 0; start < len(w); {
		_, size := utf8.DecodeRuneInString(w[start:])
		covered := false
		for end := start + size; end <= len(w) && end-start <= m.maxLen; {
			if id, ok := m.vocab[w[start:end]]; ok {
				if end-start == size {
					covered = true
				}
				if s := best[start].score + float64(m.scores[id]); s > best[end].score {
					best[end] = node{score: s, start: start, id: id}
				}
			}
			if end == len(w) {
				break
			}
			_, next := utf8.DecodeRuneInString(w[end:])
			end += next
		}
		if !covered {
			if s := best[start].score + m.unkScore; s > best[start+size].score {
				best[start+size] = node{score: s, start: start, id: -1}
			}
		}
		start += size
	}
	var path []int // end positions, last first
	for end := len(w); end > 0; end = best[end].start {
		path = append(path, end)
	}
	prevUnk := false
	for i := len(path) - 1; i >= 0; i-- {
		end := path[i]
		n := best[end]
		if n.id >= 0 {
			out = append(out, n.id)
			prevUnk = false
			continue
		}
		var err error
		if out, prevUnk, err = m.unknown(w[n.start:end], out, prevUnk); err != nil {
			return out, err
		}
	}
	return out, nil
}
