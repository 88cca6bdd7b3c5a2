package cuda

// What a communicator (NCCL through runtime/collective) needs from a device: the stream its calls
// go on, so that they run after the kernels queued before them and before those queued after,
// and a way to wait for that stream in the device's context.

// ComputeStream is the stream the device's launches, copies and Sync use.
func (d *Device) ComputeStream() uintptr { return uintptr(d.stream) }

// SyncStream waits for stream s with the device's context current (collective.FromNCCL's sync).
func (d *Device) SyncStream(s uintptr) error {
	return d.do(func() error {
		if err := d.drv.StreamSynchronize(Stream(s)); err != nil {
			return d.errorf("waiting for stream %#x: %w", s, err)
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
