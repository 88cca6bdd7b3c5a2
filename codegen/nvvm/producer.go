package nvvm

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/codegen/ptx"
)

// Producer compiles kernels to PTX through NVVM IR and libNVVM. The library is loaded on first
// use from LibPath, or where libnvvm.Load looks when it is empty.
type Producer struct {
	LibPath string
	// IROnly makes Module return the NVVM IR module instead of PTX, without libNVVM (gcomp build
	// --emit nvvm writes it).
	IROnly bool

	once sync.Once
	lib  *libnvvm.Lib
	err  error
}

// Name is the producer's --backend name.
func (p *Producer) Name() string { return "nvvm" }

// Options are the libNVVM options for target t: IEEE rounding everywhere (no contraction of a
// multiply and an add into an fma, correctly rounded division and square root, denormals kept),
// as the op table and codegen/ptx's .rn instructions compute.
func Options(t ptx.Target) []string {
	return []string{fmt.Sprintf("-arch=compute_%d", t.SM), "-opt=3", "-ftz=0", "-prec-div=1", "-prec-sqrt=1", "-fma=0"}
}

// Lib loads libNVVM (once).
func (p *Producer) Lib() (*libnvvm.Lib, error) {
	p.once.Do(func() { p.lib, p.err = libnvvm.Load(p.LibPath) })
	return p.lib, p.err
}

// Module lowers kernels to one NVVM IR module and compiles it with libNVVM: the PTX module and
// each kernel's launch, as ptx.Module returns them. A libNVVM failure names the kernel it is in.
func (p *Producer) Module(kernels []ptx.Kernel, t ptx.Target) (string, []ptx.Launch, error) {
	m, launches, err := build(kernels, t)
	if err != nil {
		return "", nil, err
	}
	if p.IROnly {
		return m.m.String(), launches, nil
	}
	lib, err := p.Lib()
	if err != nil {
		return "", nil, err
	}
	text, log, err := compile(lib, "module", m, t)
	if err != nil {
		// Find the kernel at fault: compile each alone.
		for _, k := range kernels {
			mk, _, kerr := build([]ptx.Kernel{k}, t)
			if kerr == nil {
				_, _, kerr = compile(lib, k.Name, mk, t)
			}
			if kerr != nil {
				return "", nil, kerr
			}
		}
		return "", nil, err
	}
	// Warnings reach the plan as notes of the kernels they name.
	for _, line := range strings.Split(log, "\n") {
		for i, k := range kernels {
			if line != "" && strings.Contains(line, k.Name) {
				launches[i].Notes = append(launches[i].Notes, "libNVVM: "+strings.TrimSpace(line))
			}
		}
	}
	return text, launches, nil
}

// compile runs libNVVM on one built module, linking libdevice when the module calls it.
func compile(lib *libnvvm.Lib, name string, m *module, t ptx.Target) (string, string, error) {
	mods := []libnvvm.Module{{Name: "gcomp", Data: []byte(m.m.String())}}
	if m.libdevice {
		path, err := lib.Libdevice()
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", name, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", name, err)
		}
		mods = append(mods, libnvvm.Module{Name: "libdevice", Data: data, Lazy: true})
	}
	out, log, err := lib.Compile(name, mods, Options(t)...)
	return string(out), log, err
}
