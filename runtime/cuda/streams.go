package cuda

import (
	"unsafe"

	"github.com/gcomp/gcomp/runtime/executor"
)

// The Device's executor.Streams: uploads on a second stream, ordered against
// the compute stream with events (cuStreamWaitEvent), from pinned memory.

// Record records an event on the compute stream.
func (d *Device) Record() (executor.Event, error) {
	var id executor.Event
	err := d.do(func() error {
		var err error
		id, err = d.recordLocked(d.stream)
		return err
	})
	return id, err
}

// Upload queues the copies on the upload stream after the event after, and
// records an event after them. Sources in AllocHost's memory are copied in
// place; others are staged in pinned buffers first.
func (d *Device) Upload(copies []executor.HostCopy, after executor.Event) (executor.Event, error) {
	var id executor.Event
	err := d.do(func() error {
		if d.copier == 0 {
			s, err := d.drv.StreamCreate()
			if err != nil {
				return d.errorf("creating the upload stream: %w", err)
			}
			d.copier = s
		}
		if after != 0 {
			e, ok := d.events[after]
			if !ok {
				return d.errorf("upload after event %d, which the device does not hold", after)
			}
			if err := d.drv.StreamWaitEvent(d.copier, e); err != nil {
				return d.errorf("ordering an upload after the compute stream: %w", err)
			}
		}
		for _, c := range copies {
			if len(c.Src) == 0 {
				continue
			}
			if !d.pinnedLocked(c.Src) {
				if err := d.writeLocked(c.Dst, c.Src, d.copier); err != nil {
					return err
				}
				continue
			}
			if err := d.drv.MemcpyHtoDAsync(DevicePtr(c.Dst), c.Src, d.copier); err != nil {
				return d.errorf("uploading %d bytes to %#x: %w", len(c.Src), uint64(c.Dst), err)
			}
		}
		var err error
		id, err = d.recordLocked(d.copier)
		return err
	})
	return id, err
}

// Wait makes the compute stream wait for e.
func (d *Device) Wait(e executor.Event) error {
	return d.do(func() error {
		ev, ok := d.events[e]
		if !ok {
			return d.errorf("waiting for event %d, which the device does not hold", e)
		}
		if err := d.drv.StreamWaitEvent(d.stream, ev); err != nil {
			return d.errorf("waiting for an upload: %w", err)
		}
		return nil
	})
}

// Release keeps e's CUDA event for reuse: a stream that waits for it has
// captured the record it waits for, so recording it anew is safe.
func (d *Device) Release(e executor.Event) error {
	if e == 0 {
		return nil
	}
	return d.do(func() error {
		if _, ok := d.events[e]; !ok {
			return d.errorf("releasing event %d, which the device does not hold", e)
		}
		d.releaseLocked(e)
		return nil
	})
}

// AllocHost allocates pinned host memory that uploads copy from in place.
func (d *Device) AllocHost(n int64) ([]byte, error) {
	if n <= 0 {
		return nil, d.errorf("cannot allocate %d bytes of host memory", n)
	}
	var b []byte
	err := d.do(func() error {
		var err error
		if b, err = d.drv.MemHostAlloc(n); err != nil {
			return d.errorf("allocating %d bytes of pinned host memory: %w", n, err)
		}
		d.host[&b[0]] = b
		d.hostN += n
		return nil
	})
	return b, err
}

// FreeHost frees memory from AllocHost.
func (d *Device) FreeHost(b []byte) error {
	return d.do(func() error {
		if len(b) == 0 || d.host[&b[0]] == nil {
			return d.errorf("freeing host memory that AllocHost did not return")
		}
		b = d.host[&b[0]]
		delete(d.host, &b[0])
		d.hostN -= int64(len(b))
		if err := d.drv.MemFreeHost(b); err != nil {
			return d.errorf("freeing pinned host memory: %w", err)
		}
		return nil
	})
}

// recordLocked records an event on s: an idle CUDA event, or a new one, under a new id.
func (d *Device) recordLocked(s Stream) (executor.Event, error) {
	var e Event
	if n := len(d.idle); n > 0 {
		e, d.idle = d.idle[n-1], d.idle[:n-1]
	} else {
		var err error
		if e, err = d.drv.EventCreate(); err != nil {
			return 0, d.errorf("creating an event: %w", err)
		}
	}
	if err := d.drv.EventRecord(e, s); err != nil {
		d.idle = append(d.idle, e)
		return 0, d.errorf("recording an event: %w", err)
	}
	d.lastEv++
	d.events[d.lastEv] = e
	return d.lastEv, nil
}

func (d *Device) releaseLocked(id executor.Event) {
	d.idle = append(d.idle, d.events[id])
	delete(d.events, id)
}

// pinnedLocked reports whether b lies within a buffer from AllocHost.
func (d *Device) pinnedLocked(b []byte) bool {
	p := uintptr(unsafe.Pointer(&b[0]))
	for base, h := range d.host {
		lo := uintptr(unsafe.Pointer(base))
		if p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(h)) {
			return true
		}
	}
	return false
}
