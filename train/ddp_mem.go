package train

import (
	"fmt"
	"sync"

	"github.com/gcomp/gcomp/runtime/executor"
)

// HostMemory is the memory a rank on the reference interpreter gives its communicator: host
// buffers addressed like device memory (collective.Memory), so the collective's simulated
// implementation reduces them as it reduces a simulated GPU's. It is safe for concurrent use
// (the rank's goroutine and its communicator's).
type HostMemory struct {
	mu     sync.Mutex
	next   executor.Ptr
	blocks map[executor.Ptr][]byte
}

// NewHostMemory returns an empty HostMemory.
func NewHostMemory() *HostMemory {
	return &HostMemory{next: 1 << 20, blocks: map[executor.Ptr][]byte{}}
}

// Alloc returns n zero bytes.
func (h *HostMemory) Alloc(n int64) (executor.Ptr, error) {
	if n < 0 {
		return 0, fmt.Errorf("host memory: allocating %d bytes", n)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.next
	h.blocks[p] = make([]byte, n)
	h.next += executor.Ptr((n+255)/256*256 + 256) // a gap: an overrun is an error, not a neighbour
	return p, nil
}

// Free releases the block at p.
func (h *HostMemory) Free(p executor.Ptr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.blocks[p] == nil {
		return fmt.Errorf("host memory: freeing %#x, which is not a block", uint64(p))
	}
	delete(h.blocks, p)
	return nil
}

// span returns the n bytes at p, which must lie in one block.
func (h *HostMemory) span(p executor.Ptr, n int) ([]byte, error) {
	for base, b := range h.blocks {
		if p >= base && uint64(p-base)+uint64(n) <= uint64(len(b)) {
			return b[p-base:][:n], nil
		}
	}
	return nil, fmt.Errorf("host memory: %d bytes at %#x are not in one block", n, uint64(p))
}

// Read copies the bytes at p into dst.
func (h *HostMemory) Read(dst []byte, p executor.Ptr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := h.span(p, len(dst))
	if err == nil {
		copy(dst, b)
	}
	return err
}

// Write copies src to p.
func (h *HostMemory) Write(p executor.Ptr, src []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := h.span(p, len(src))
	if err == nil {
		copy(b, src)
	}
	return err
}
