// Package device chooses where a compiled model runs, by name:
//
//	auto     the first CUDA GPU that initializes, else the PTX simulator
//	cuda:N   CUDA GPU N (cuda alone is cuda:0)
//	sim      the PTX simulator (no GPU needed)
//	ref      the reference interpreter on the source graph (not an
//	         executor device: Open only reports the choice)
//
// and answers what PyTorch's torch.cuda answers: whether a GPU is usable
// (Available), how many (Count), and each one's name, compute capability and
// memory (Probe), or why none is usable (Report.Reason).
//
// GPU numbers are the CUDA driver's: CUDA_VISIBLE_DEVICES, which the
// driver applies, selects and renumbers them.
package device

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/runtime/cuda"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
)

// Kind is the kind of device a name selects.
type Kind int

const (
	Auto Kind = iota
	CUDA
	Sim
	Ref
)

func (k Kind) String() string {
	switch k {
	case Auto:
		return "auto"
	case CUDA:
		return "cuda"
	case Sim:
		return "sim"
	case Ref:
		return "ref"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Spec is a parsed device name.
type Spec struct {
	Kind    Kind
	Ordinal int // the GPU, for CUDA
}

func (s Spec) String() string {
	if s.Kind == CUDA {
		return fmt.Sprintf("cuda:%d", s.Ordinal)
	}
	return s.Kind.String()
}

// Names lists the accepted device names, for messages and flag help.
const Names = "auto, cuda, cuda:N, sim or ref"

// Parse parses a device name.
func Parse(name string) (Spec, error) {
	switch name {
	case "auto":
		return Spec{Kind: Auto}, nil
	case "cuda":
		return Spec{Kind: CUDA}, nil
	case "sim":
		return Spec{Kind: Sim}, nil
	case "ref":
		return Spec{Kind: Ref}, nil
	}
	if n, ok := strings.CutPrefix(name, "cuda:"); ok {
		i, err := strconv.Atoi(n)
		if err == nil && i >= 0 && n == strconv.Itoa(i) {
			return Spec{Kind: CUDA, Ordinal: i}, nil
		}
	}
	return Spec{}, fmt.Errorf("unknown device %q (want %s)", name, Names)
}

// MinArch is the oldest compute capability gcomp compiles for (sm_80, Ampere): auto passes over
// older GPUs.
var MinArch = cuda.Arch{Major: 8}

// Options configure Open and Probe.
type Options struct {
	// CUDALib is the CUDA driver library to load; empty means
	// $GCOMP_CUDA_LIB, else libcuda.so.1 wherever the dynamic loader finds it.
	CUDALib string
	// Driver, when set, is used instead of loading a driver library: the
	// simulator-backed driver of runtime/cuda/simdriver, or a test's fake.
	Driver cuda.Driver
	// CUDA configures a GPU device; nil means cuda.OptionsFromEnv()
	// (GCOMP_SYNC=1 checks every launch).
	CUDA *cuda.Options
	// Sim makes the simulator device; nil means simdev.New with default
	// options (all checks on).
	Sim func() (executor.Device, error)
}

// Selected is the device Open chose.
type Selected struct {
	Spec   Spec            // CUDA (with the GPU's number), Sim or Ref; never Auto
	Device executor.Device // nil for Ref
	// Fallback is set when auto chose the simulator: why no GPU was used
	// ("no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE: ...)").
	Fallback string
}

// Open opens the device name selects. For ref it opens nothing and returns
// the choice.
func Open(name string, opts Options) (*Selected, error) {
	spec, err := Parse(name)
	if err != nil {
		return nil, err
	}
	switch spec.Kind {
	case Ref:
		return &Selected{Spec: spec}, nil
	case Sim:
		return openSim(opts, "")
	case CUDA:
		drv, err := initDriver(opts)
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", spec, err)
		}
		dev, err := cuda.Open(drv, spec.Ordinal, cudaOptions(opts))
		if err != nil {
			return nil, err
		}
		return &Selected{Spec: spec, Device: dev}, nil
	}
	// auto
	drv, err := initDriver(opts)
	if err != nil {
		return openSim(opts, err.Error())
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return openSim(opts, err.Error())
	}
	var reasons []string
	for i := range n {
		dev, err := cuda.Open(drv, i, cudaOptions(opts))
		if err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		// gcomp's kernels target sm_80 and newer; an older GPU would refuse every module.
		if a := dev.Info().Arch; a.Major < MinArch.Major {
			reasons = append(reasons, fmt.Sprintf("%s has compute capability %d.%d; gcomp's kernels need %d.%d or newer", dev.Name(), a.Major, a.Minor, MinArch.Major, MinArch.Minor))
			dev.Close()
			continue
		}
		return &Selected{Spec: Spec{Kind: CUDA, Ordinal: i}, Device: dev}, nil
	}
	if len(reasons) == 0 {
		return openSim(opts, cuda.ErrNoDevice.Error())
	}
	return openSim(opts, "no GPU initialized: "+strings.Join(reasons, "; "))
}

func cudaOptions(opts Options) cuda.Options {
	if opts.CUDA != nil {
		return *opts.CUDA
	}
	return cuda.OptionsFromEnv()
}

// openSim opens the simulator; fallback says why auto chose it.
func openSim(opts Options, fallback string) (*Selected, error) {
	var dev executor.Device = simdev.New(simdev.Options{})
	if opts.Sim != nil {
		var err error
		if dev, err = opts.Sim(); err != nil {
			return nil, fmt.Errorf("device sim: %w", err)
		}
	}
	return &Selected{Spec: Spec{Kind: Sim}, Device: dev, Fallback: fallback}, nil
}

// initDriver loads and initializes the CUDA driver. Its errors say what
// is missing: "no CUDA driver library (libcuda.so.1) found: ...", "no CUDA
// device (cuInit: ...)", or the driver's own failure.
func initDriver(opts Options) (cuda.Driver, error) {
	drv, err := loadDriver(opts)
	if err != nil {
		return nil, err
	}
	return drv, initialize(drv)
}

func loadDriver(opts Options) (cuda.Driver, error) {
	if opts.Driver != nil {
		return opts.Driver, nil
	}
	return cuda.Load(opts.CUDALib)
}

func initialize(drv cuda.Driver) error {
	err := drv.Init()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cuda.ErrNoDevice):
		return fmt.Errorf("%w (%v)", cuda.ErrNoDevice, err)
	}
	return fmt.Errorf("the CUDA driver did not initialize: %w", err)
}

// GPU describes one CUDA device.
type GPU struct {
	cuda.Info
	FreeMem int64 // when the device opened
	Err     error // the device did not open (Info may be partial)
}

// Report is what Probe found.
type Report struct {
	Library       string // the driver library asked for
	DriverVersion int    // 1000*major + 10*minor; 0 when no library loaded
	GPUs          []GPU
	// Reason says why no GPU is usable; empty when one is.
	Reason string
}

// Usable reports whether a GPU opened.
func (r *Report) Usable() bool { return r.Reason == "" }

// Probe loads the CUDA driver and describes every GPU, opening each
// briefly to read its free memory.
func Probe(opts Options) *Report {
	r := &Report{Library: cuda.LibraryPath(opts.CUDALib)}
	drv, err := loadDriver(opts)
	if err != nil {
		r.Reason = err.Error()
		return r
	}
	r.DriverVersion, _ = drv.DriverVersion()
	if err := initialize(drv); err != nil {
		r.Reason = err.Error()
		return r
	}
	n, err := drv.DeviceCount()
	if err != nil {
		r.Reason = err.Error()
		return r
	}
	if n == 0 {
		r.Reason = cuda.ErrNoDevice.Error()
		return r
	}
	usable := false
	for i := range n {
		g := GPU{}
		g.Info, _, g.Err = cuda.DeviceInfo(drv, i)
		if g.Err == nil {
			var dev *cuda.Device
			if dev, g.Err = cuda.Open(drv, i, cuda.Options{}); g.Err == nil {
				g.FreeMem, _, g.Err = dev.MemInfo()
				dev.Close()
			}
		}
		usable = usable || g.Err == nil
		r.GPUs = append(r.GPUs, g)
	}
	if !usable {
		r.Reason = "no GPU initialized"
	}
	return r
}

// Count is the number of CUDA GPUs the driver reports (0 without a driver
// library or device). It uses $GCOMP_CUDA_LIB or libcuda.so.1.
func Count() int {
	drv, err := initDriver(Options{})
	if err != nil {
		return 0
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return 0
	}
	return n
}

// Available reports whether the CUDA driver reports a GPU.
func Available() bool { return Count() > 0 }

// FormatVersion writes a CUDA version number as major.minor: 12020 is "12.2".
func FormatVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}
