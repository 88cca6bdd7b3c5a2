package tokenizer

import (
	"strings"
	"sync"
)

// cacheSize bounds the word cache; a full cache starts over (text repeats its common words, so
// they come back quickly).
const cacheSize = 1 << 16

// wordCache remembers the ids of words a byte-level tokenizer has merged: BPE is most of the
// cost of encoding, and common words recur. A nil cache remembers nothing.
type wordCache struct {
	mu sync.Mutex
	m  map[string][]int
}

func (c *wordCache) get(w string) ([]int, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	ids, ok := c.m[w]
	c.mu.Unlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheSize {
		c.m = make(map[string][]int)
	}
	c.m[strings.Clone(w)] = ids
	c.mu.Unlock()
}
