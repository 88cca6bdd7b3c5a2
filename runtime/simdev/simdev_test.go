package simdev

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/sim"
)

// Options.MemoryLimit bounds the device, MemInfo reports it, and an
// out-of-range limit is an error at the first use.
func TestMemoryLimit(t *testing.T) {
	d := New(Options{MemoryLimit: 1 << 20})
	if free, total, err := d.MemInfo(); err != nil || total != 1<<20 || free != 1<<20 {
		t.Errorf("MemInfo = %d, %d, %v", free, total, err)
	}
	if _, err := d.Alloc(2 << 20); err == nil || !strings.Contains(err.Error(), "out of device memory") {
		t.Errorf("Alloc beyond the limit: %v", err)
	}
	if _, total, _ := New(Options{}).MemInfo(); total != sim.DefaultMemoryLimit() {
		t.Errorf("default total %d, want %d", total, sim.DefaultMemoryLimit())
	}
	bad := New(Options{MemoryLimit: -5})
	if _, err := bad.Alloc(8); err == nil || !strings.Contains(err.Error(), "memory limit -5 bytes") {
		t.Errorf("Alloc with a negative limit: %v", err)
	}
	if _, err := bad.Load([]byte(".version 7.8\n.target sm_80\n.address_size 64\n")); err == nil {
		t.Error("Load with a negative limit succeeded")
	}
}

// A PTX error names the line and the kernel, and says it is the module's line.
func TestLoadError(t *testing.T) {
	_, err := New(Options{}).Load([]byte(".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k0_concat()\n{\n\t.reg .b64 %rd<1500009>;\n}\n"))
	if err == nil || err.Error() != "PTX module, line 6:12: bad register count 1500009 for %rd in k0_concat (1 to 1048576 per declaration)" {
		t.Errorf("err = %v", err)
	}
}
