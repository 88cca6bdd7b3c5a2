package simrank

import (
	"testing"

	"github.com/gcomp/gcomp/runtime/collective"
	"github.com/gcomp/gcomp/runtime/cuda/simdriver"
)

// A simulated GPU gives the simulated collective its StreamDevice, so that communicators made
// over collective.MemoryOf(dev) are stream-ordered; over the device itself they are not.
func TestStreamOrderedComms(t *testing.T) {
	var devs []*Device
	for range 2 {
		d, err := Open(simdriver.Options{Schedule: simdriver.HighStreamFirst})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		devs = append(devs, d)
	}
	for _, c := range []struct {
		name    string
		mem     func(*Device) collective.Memory
		ordered bool
	}{
		{"MemoryOf", func(d *Device) collective.Memory { return collective.MemoryOf(d) }, true},
		{"the device", func(d *Device) collective.Memory { return d }, false},
	} {
		comms, err := collective.NewLocal([]collective.Memory{c.mem(devs[0]), c.mem(devs[1])}, collective.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cm := range comms {
			if got := collective.StreamOrdered(cm); got != c.ordered {
				t.Errorf("%s: rank %d stream-ordered %v, want %v", c.name, cm.Rank(), got, c.ordered)
			}
			cm.Close()
		}
	}
	if _, ok := collective.MemoryOf(devs[0]).(*collective.StreamDevice); !ok {
		t.Errorf("MemoryOf(a simulated GPU) is not its StreamDevice")
	}
}
