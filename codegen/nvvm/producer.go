package nvvm

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/codegen/plan"
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
func Options(t plan.Target) []string {
	return []string{fmt.Sprintf("-arch=compute_%d", t.SM), "-opt=3", "-ftz=0", "-prec-div=1", "-prec-sqrt=1", "-fma=0"}
}

// Lib loads libNVVM (once).
func (p *Producer) Lib() (*libnvvm.Lib, error) {
	p.once.Do(func() { p.lib, p.err = libnvvm.Load(p.LibPath) })
	return p.lib, p.err
}

// lower lowers kernels to NVVM IR and compiles it with libNVVM: the PTX module and each
// kernel's launch, as ptx.Module returns them. Kernels equal up to names share one entry
// (classes). The distinct kernels are compiled in programs of programKernels, in parallel
// (parallel.go); the PTX is the same whatever the number of threads. A libNVVM failure names the
// kernel it is in.
func (p *Producer) lower(kernels []plan.Kernel, t plan.Target) (string, []plan.Launch, error) {
	uniq, of, users, err := classes(kernels)
	if err != nil {
		return "", nil, err
	}
	if p.IROnly {
		m, launches, err := build(uniq, t)
		if err != nil {
			return "", nil, err
		}
		return m.m.String(), expand(kernels, uniq, of, launches), nil
	}
	// Lower every kernel first, in order, so the first kernel no template takes is the error.
	launches := make([]plan.Launch, len(uniq))
	for i, k := range uniq {
		_, l, err := build([]plan.Kernel{k}, t)
		if err != nil {
			return "", nil, err
		}
		launches[i] = l[0]
	}
	lib, err := p.Lib()
	if err != nil {
		return "", nil, err
	}
	text, logs, err := compileAll(lib, uniq, users, t)
	if err != nil {
		return "", nil, err
	}
	// Warnings reach the plan as notes of the kernels they name.
	for c, log := range logs {
		for _, line := range strings.Split(log, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				launches[c].Notes = append(launches[c].Notes, "libNVVM: "+line)
			}
		}
	}
	return text, expand(kernels, uniq, of, launches), nil
}

// compile runs libNVVM on one built module, linking libdevice when the module calls it.
func compile(lib *libnvvm.Lib, name string, m *module, t plan.Target) (string, string, error) {
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

// refusedText is in every error for a kernel whose template has no NVVM counterpart.
const refusedText = "has no NVVM counterpart yet"

// Refused reports whether err says that no template of this package takes a kernel (rather than
// that the kernel or the library is at fault): a producer choosing per kernel takes codegen/ptx's.
func Refused(err error) bool {
	return err != nil && strings.Contains(err.Error(), refusedText)
}
