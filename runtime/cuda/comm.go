package cuda

// What a communicator (NCCL through runtime/collective) needs from a device: a stream of its own
// for the collectives, ordered against the compute stream with events (a bucket's all-reduce
// after the backward kernels that wrote it, the optimizer's kernels after the last all-reduce),
// a way to wait for a stream in the device's context (SyncStream, hostfunc.go), and the context made current for NCCL's
// ncclCommInitRank.

// CommStream returns the device's communication stream, created on first use. Sync waits for it
// too.
func (d *Device) CommStream() (uintptr, error) {
	err := d.do(func() error {
		if d.comm != 0 {
			return nil
		}
		s, err := d.drv.StreamCreate()
		if err != nil {
			return d.errorf("creating the communication stream: %w", err)
		}
		d.comm = s
		return nil
	})
	return uintptr(d.comm), err
}

// CommAfterCompute makes the work queued on the communication stream from now on wait for the
// compute work queued so far (an event recorded on the compute stream); the host does not wait.
func (d *Device) CommAfterCompute() error { return d.order(true) }

// ComputeAfterComm makes the compute work queued from now on wait for the communication queued
// so far.
func (d *Device) ComputeAfterComm() error { return d.order(false) }

// order makes one stream wait for the other's work so far: the communication stream for the
// compute stream's (commWaits), or the other way round.
func (d *Device) order(commWaits bool) error {
	return d.do(func() error {
		if d.comm == 0 {
			return d.errorf("no communication stream (CommStream first)")
		}
		from, to := d.stream, d.comm
		if !commWaits {
			from, to = d.comm, d.stream
		}
		id, err := d.recordLocked(from)
		if err != nil {
			return err
		}
		defer d.releaseLocked(id) // the wait has captured the record
		if err := d.drv.StreamWaitEvent(to, d.events[id]); err != nil {
			return d.errorf("ordering the communication and compute streams: %w", err)
		}
		return nil
	})
}

// MakeCurrent makes the device's context current on the calling thread, which the caller has
// locked (runtime.LockOSThread): NCCL's ncclCommInitRank makes its communicator on the current
// device.
func (d *Device) MakeCurrent() error {
	if err := d.drv.CtxSetCurrent(d.ctx); err != nil {
		return d.errorf("%w", err)
	}
	return nil
}
