package cuda

import (
	"fmt"

	"github.com/gcomp/gcomp/runtime/executor"
)

// LoadBinaries is the Device's executor.BinaryLoader: it loads the cubin that runs on this GPU
// and, if none does or the driver refuses it, JIT-compiles the PTX as Load does, the way the
// CUDA runtime treats a fat binary. A cubin for sm_XY runs on GPUs of compute capability X.Z
// with Z ≥ Y (NVIDIA's binary compatibility rule), so the closest such image is taken.
func (d *Device) LoadBinaries(ptx []byte, cubins map[string][]byte) (executor.Module, error) {
	arch, img := d.pickCubin(cubins)
	if img == nil {
		return d.Load(ptx)
	}
	m := &module{d: d, entries: ptxEntries(ptx), funcs: map[string]Function{}, image: arch}
	err := d.do(func() error {
		h, _, err := d.drv.ModuleLoadDataEx(img)
		if err != nil {
			return err
		}
		m.handle = h
		d.modules[m] = true
		return nil
	})
	if err != nil {
		return d.Load(ptx) // the PTX is the fallback
	}
	return m, nil
}

// pickCubin returns the architecture and image of the cubin that runs on the device and is
// closest to it, or nil.
func (d *Device) pickCubin(cubins map[string][]byte) (string, []byte) {
	dev := d.info.Arch
	best := -1
	for minor := dev.Minor; minor >= 0 && best < 0; minor-- {
		if _, ok := cubins[fmt.Sprintf("sm_%d%d", dev.Major, minor)]; ok {
			best = minor
		}
	}
	if best < 0 {
		return "", nil
	}
	arch := fmt.Sprintf("sm_%d%d", dev.Major, best)
	return arch, cubins[arch]
}

// Image says what a module was loaded from: "sm_80" for a cubin, "PTX" for JIT-compiled PTX.
func (m *module) Image() string {
	if m.image == "" {
		return "PTX"
	}
	return m.image
}
