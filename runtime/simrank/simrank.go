package simrank

import (
	"fmt"

	"github.com/gcomp/gcomp/runtime/collective"
	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
)

// Device is a simulated rank's GPU: a cuda.Device over a simulator-backed driver of its own.
// Its StreamDevice makes the simulated collectives stream-ordered on it (collective.MemoryOf).
type Device struct {
	*cuda.Device
	drv *simdriver.Driver
}

// Open opens a simulated GPU whose driver runs queued work in o's schedule.
func Open(o simdriver.Options) (*Device, error) {
	drv := simdriver.NewWithOptions(o)
	dev, err := cuda.Open(drv, 0, cuda.Options{})
	if err != nil {
		return nil, fmt.Errorf("opening the simulated GPU: %w", err)
	}
	return &Device{Device: dev, drv: drv}, nil
}

// StreamDevice is the rank's device as the simulated collective needs it: calls on its streams
// are queued there (collective.OnCUDA over the driver's in-stream memory).
func (d *Device) StreamDevice() *collective.StreamDevice {
	return collective.OnCUDA(d.Device, d.drv.Memory())
}

// Trace is the order in which the driver ran the queued work (with Options.Trace).
func (d *Device) Trace() []simdriver.Ran { return d.drv.Trace() }
