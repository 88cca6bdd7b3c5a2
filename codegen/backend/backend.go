// Package backend names gcomp's PTX producers behind one interface, so the compiler and the
// command line choose one by name (--backend ptx|nvvm|auto): codegen/ptx writes PTX text directly,
// codegen/nvvm builds NVVM IR and has NVIDIA's libNVVM compile it. Both give every kernel the
// same name, parameters and launch, so one launch plan and one executor serve either.
package backend

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/nvvm"
	"github.com/gcomp/gcomp/codegen/ptx"
)

// Producer lowers a model's kernels to one PTX module and each kernel's launch.
type Producer interface {
	Name() string
	Module(kernels []ptx.Kernel, t ptx.Target) (string, []ptx.Launch, error)
}

// Names are the producers New knows; the first is the default.
var Names = []string{"ptx", "nvvm", "auto"}

// PTX is codegen/ptx's emitter.
type PTX struct{}

func (PTX) Name() string { return "ptx" }

func (PTX) Module(kernels []ptx.Kernel, t ptx.Target) (string, []ptx.Launch, error) {
	return ptx.Module(kernels, t)
}

// New returns the producer called name ("" is the default, ptx). nvvmLib names libNVVM for the
// nvvm producer ("" searches; see codegen/nvvm/libnvvm), which loads it on first use.
func New(name, nvvmLib string) (Producer, error) {
	switch name {
	case "", "ptx":
		return PTX{}, nil
	case "nvvm":
		return NVVM{&nvvm.Producer{LibPath: nvvmLib}}, nil
	case "auto":
		return &Auto{NVVM: &nvvm.Producer{LibPath: nvvmLib}}, nil
	}
	return nil, fmt.Errorf("unknown backend %q (want ptx, nvvm or auto)", name)
}
