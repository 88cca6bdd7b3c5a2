package collective

import "github.com/gcomp/gcomp/runtime/cuda"

// OnCUDA is a rank's StreamDevice for dev, a CUDA device over the
// simulator-backed driver whose memory inStream is (simdriver's
// Driver.Memory): calls on stream 0 read and write dev, calls on a stream of
// dev (its ComputeStream or one of NewStream's) are queued there with
// dev.LaunchHostFunc, and Wait synchronizes those streams with dev.SyncStream.
func OnCUDA(dev *cuda.Device, inStream Memory) *StreamDevice {
	return &StreamDevice{
		Memory:   dev,
		InStream: inStream,
		LaunchHostFunc: func(s Stream, f func()) error {
			return dev.LaunchHostFunc(cuda.Stream(s), f)
		},
		SyncStream: func(s Stream) error { return dev.SyncStream(cuda.Stream(s)) },
	}
}
