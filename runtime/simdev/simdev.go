// Package simdev is the PTX simulator as an executor device: compiled models
// run on the CPU, kernel by kernel, with the simulator's memcheck, racecheck
// and synccheck on (unless Options.NoCheck), and every launch reports the
// simulator's counters.
package simdev

import (
	"errors"
	"fmt"
	"time"

	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/sim"
)

// Options configure the simulated device.
type Options struct {
	NoCheck bool // skip memcheck, racecheck and synccheck (bounds are still enforced)
	Workers int  // goroutines running blocks; 0 means GOMAXPROCS
	// RaceGlobal checks every launch for races on global memory between its
	// blocks (blocks then run one at a time); Order and Seed set the order
	// blocks run in (sim.Config).
	RaceGlobal bool
	Order      sim.BlockOrder
	Seed       uint64
	// MemoryLimit is the most bytes the device holds at once; 0 means
	// sim.DefaultMemoryLimit (a fraction of the host's memory).
	MemoryLimit int64
}

// Device is a simulated GPU.
type Device struct {
	d   *sim.Device
	opt Options
	err error // a bad option
}

var _ executor.Device = (*Device)(nil)

// New returns a simulated device with empty memory. A MemoryLimit out of
// range makes every Alloc and Load fail with the reason.
func New(opt Options) *Device {
	d := &Device{d: sim.NewDevice(), opt: opt}
	if opt.MemoryLimit != 0 {
		d.err = d.d.SetMemoryLimit(opt.MemoryLimit)
	}
	return d
}

// Sim is the underlying simulator device.
func (d *Device) Sim() *sim.Device { return d.d }

func (d *Device) Name() string { return "sim (PTX simulator)" }

func (d *Device) Alloc(n int64) (executor.Ptr, error) {
	if d.err != nil {
		return 0, d.err
	}
	if n > int64(^uint(0)>>1) {
		return 0, errors.New("sim: allocation too large")
	}
	p, err := d.d.Alloc(int(n))
	return executor.Ptr(p), err
}

func (d *Device) Free(p executor.Ptr) error                { return d.d.Free(uint64(p)) }
func (d *Device) Write(p executor.Ptr, src []byte) error   { return d.d.Write(uint64(p), src) }
func (d *Device) Read(dst []byte, p executor.Ptr) error    { return d.d.Read(uint64(p), dst) }
func (d *Device) Zero(p executor.Ptr, n int64) error       { return d.d.Memset(uint64(p), 0, int(n)) }
func (d *Device) Label(p executor.Ptr, label string) error { return d.d.Label(uint64(p), label) }
func (d *Device) Copy(dst, src executor.Ptr, n int64) error {
	return d.d.Copy(uint64(dst), uint64(src), int(n))
}

// Sync returns at once: simulated launches and copies are synchronous.
func (d *Device) Sync() error { return nil }

// MemInfo reports the simulator's capacity and what is allocated.
func (d *Device) MemInfo() (free, total int64, err error) {
	total = d.d.MemoryLimit()
	return total - d.d.Allocated(), total, nil
}

func (d *Device) Close() error { return nil }

func (d *Device) Load(ptx []byte) (executor.Module, error) {
	if d.err != nil {
		return nil, d.err
	}
	m, err := d.d.Load(string(ptx))
	if err != nil {
		var se *sim.SyntaxError
		if errors.As(err, &se) {
			// The caller may not have a file to name: say what the line is of.
			return nil, fmt.Errorf("PTX module, line %v", err)
		}
		return nil, err
	}
	return &module{m: m, opt: d.opt, ptx: ptx}, nil
}

type module struct {
	m   *sim.Module
	opt Options
	ptx []byte // for the source positions of errors (withSource)
}

func (m *module) Launch(kernel string, cfg executor.LaunchConfig, args []executor.Ptr) (*executor.Counters, error) {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = uint64(a)
	}
	narrowScalars(m.m, kernel, vals)
	start := time.Now()
	st, err := m.m.Launch(kernel, sim.Config{
		Grid:        sim.Dim3{X: cfg.Grid[0], Y: cfg.Grid[1], Z: cfg.Grid[2]},
		Block:       sim.Dim3{X: cfg.Block[0], Y: cfg.Block[1], Z: cfg.Block[2]},
		SharedBytes: cfg.SharedBytes,
		Dependent:   cfg.PDL,
		NoCheck:     m.opt.NoCheck,
		Workers:     m.opt.Workers,
		RaceGlobal:  m.opt.RaceGlobal,
		Order:       m.opt.Order,
		Seed:        m.opt.Seed,
	}, vals...)
	if err != nil {
		return nil, withSource(m.ptx, err)
	}
	return &executor.Counters{
		Time:                time.Since(start), // of the simulation, not of a GPU
		WarpInsts:           st.WarpInsts,
		ThreadInsts:         st.ThreadInsts,
		GlobalLoadBytes:     st.GlobalLoadBytes,
		GlobalLoadSectors:   st.GlobalLoadSectors,
		GlobalStoreBytes:    st.GlobalStoreBytes,
		GlobalStoreSectors:  st.GlobalStoreSectors,
		SharedBankConflicts: st.SharedBankConflicts,
	}, nil
}

func (m *module) Close() error {
	m.m.Close()
	return nil
}
