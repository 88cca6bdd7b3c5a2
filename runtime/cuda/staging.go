package cuda

import "math/bits"

// staging is a device's pool of pinned host buffers. A write copies its
// bytes into one and queues the copy from it; the buffer is held until the
// stream has passed the copy (the next sync), then reused.
type staging struct {
	idle     [][]byte // whole buffers, free for use
	held     [][]byte // whole buffers queued copies still use
	inFlight int64    // bytes held
	pinned   int64    // bytes of all buffers
	failed   bool     // pinned memory could not be allocated: stop trying
}

// minStaging is the smallest staging buffer.
const minStaging = 64 << 10

// get returns n bytes of a pinned buffer (the smallest idle one that fits,
// else a new one whose size is n rounded up to a power of two), or nil when
// n exceeds limit or no pinned memory can be had; the caller then copies
// synchronously.
func (s *staging) get(drv Driver, n, limit int64) []byte {
	if s.failed || n > limit {
		return nil
	}
	best := -1
	for i, b := range s.idle {
		if int64(cap(b)) >= n && (best < 0 || cap(b) < cap(s.idle[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := s.idle[best]
		s.idle = append(s.idle[:best], s.idle[best+1:]...)
		return b[:n]
	}
	size := int64(minStaging)
	if n > size {
		size = 1 << bits.Len64(uint64(n-1))
	}
	b, err := drv.MemHostAlloc(size)
	if err != nil {
		s.failed = true
		return nil
	}
	s.pinned += size
	return b[:n]
}

// put returns an unused buffer to the pool.
func (s *staging) put(b []byte) { s.idle = append(s.idle, b[:cap(b)]) }

// hold marks b as in use by a queued copy.
func (s *staging) hold(b []byte) {
	s.held = append(s.held, b[:cap(b)])
	s.inFlight += int64(cap(b))
}

// release returns the held buffers to the pool (the stream has passed
// every queued copy).
func (s *staging) release() {
	s.idle = append(s.idle, s.held...)
	s.held, s.inFlight = nil, 0
}

// free releases every buffer.
func (s *staging) free(drv Driver) error {
	var first error
	for _, list := range [][][]byte{s.idle, s.held} {
		for _, b := range list {
			if err := drv.MemFreeHost(b); err != nil && first == nil {
				first = err
			}
		}
	}
	*s = staging{}
	return first
}
