package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Dim3 is a grid or block size, or a thread or block index.
type Dim3 struct{ X, Y, Z int }

func (d Dim3) count() int { return d.X * d.Y * d.Z }

func (d Dim3) String() string { return fmt.Sprintf("(%d,%d,%d)", d.X, d.Y, d.Z) }

func (d Dim3) unflatten(i int) Dim3 {
	return Dim3{i % d.X, i / d.X % d.Y, i / (d.X * d.Y)}
}

// Config describes one kernel launch.
type Config struct {
	Grid, Block Dim3
	SharedBytes int   // dynamic shared memory per block
	NoCheck     bool  // skip memcheck/racecheck/synccheck for speed (bounds are still enforced)
	Workers     int   // goroutines running blocks; 0 means GOMAXPROCS
	MaxSteps    int64 // warp instructions a block may run; 0: 2^28
	// MaxLaunchSteps bounds the whole launch's work (0: 2^32), in warp instructions, each
	// block counting blockCost more for starting: a grid too large for it is refused before
	// it runs, and a launch whose blocks together run past it stops with an error.
	MaxLaunchSteps int64
	// Order is the order blocks run in, Seed the seed of RandomOrder. Any
	// order but InOrder (and RaceGlobal) runs the blocks one at a time, so
	// the order asked for is the order that happens: a kernel whose blocks
	// race on global memory then gives the result of that order, and the
	// simulator's own accesses do not race.
	Order BlockOrder
	Seed  uint64
	// RaceGlobal checks for races on global memory between the blocks of
	// the launch (see globalrace.go); blocks then run one at a time.
	RaceGlobal bool
	// Dependent makes the launch a programmatic dependent launch of the previous launch on the
	// device (griddep.go): its threads may run before that one completes, until
	// griddepcontrol.wait. With checks on, reading before the wait what a launch that may still
	// run wrote is a "dependent-launch race".
	Dependent bool
}

// Limits of the simulated device (sm_80 and later).
const (
	MaxThreadsPerBlock = 1024
	MaxSharedPerBlock  = 227 << 10
	defaultMaxSteps    = 1 << 28 // warp instructions per block before giving up on a hung kernel
	// defaultMaxLaunchSteps is a launch's work before giving up: some minutes of simulation.
	defaultMaxLaunchSteps = 1 << 32
	// blockCost is what starting a block costs the simulator, in warp instructions (about 3 µs).
	blockCost = 32
)

// Error is an error raised while a kernel runs: a check that fired or an
// instruction that cannot execute. It names the kernel, the PTX line, the
// thread and the block.
type Error struct {
	Kind   string // "memcheck", "racecheck", "synccheck" or "error"
	Kernel string
	Line   int
	Inst   string
	Thread Dim3
	Block  Dim3
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: kernel %s, line %d (%s), thread %v, block %v: %s",
		e.Kind, e.Kernel, e.Line, e.Inst, e.Thread, e.Block, e.Msg)
}

// Param describes one kernel parameter.
type Param struct {
	Name  string
	Type  string // PTX type of the declaration ("u64", "f32", "b8" for byte arrays)
	Size  int
	Align int
}

// Kernels lists the module's .entry functions in source order.
func (m *Module) Kernels() []string {
	var ks []string
	for _, n := range m.order {
		if m.funcs[n].entry {
			ks = append(ks, n)
		}
	}
	return ks
}

// Params returns the parameters of a kernel.
func (m *Module) Params(kernel string) ([]Param, error) {
	f, ok := m.funcs[kernel]
	if !ok || !f.entry {
		return nil, fmt.Errorf("sim: no kernel %q in module (kernels: %s)", kernel, strings.Join(m.Kernels(), ", "))
	}
	ps := make([]Param, len(f.params))
	for i, p := range f.params {
		ps[i] = Param{p.Name, p.Type, p.Size, p.Align}
	}
	return ps, nil
}

// GlobalAddr returns the device address of a module-scope .global or .const variable.
func (m *Module) GlobalAddr(name string) (uint64, bool) {
	a, ok := m.globals[name]
	if !ok {
		return 0, false
	}
	return a.addr, true
}

// launch is the state shared by all blocks of one launch.
type launch struct {
	m        *Module
	k        *function
	cfg      Config
	params   []byte
	check    bool
	shared   int // bytes per block
	dynBytes int
	grace    *globalRace // the global racecheck's state, or nil
	dep      *depLaunch  // the dependent-launch check's state, or nil (unchecked)
	stop     atomic.Bool
	mu       sync.Mutex
	err      error
	errBlock int
}

func (l *launch) fail(block int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Keep the error of the lowest block so reports do not depend on scheduling.
	if l.err == nil || block < l.errBlock {
		l.err, l.errBlock = err, block
	}
	l.stop.Store(true)
}

// Launch runs kernel over the grid and returns the launch's counters. Each
// argument fills the next .param in order: uint8..uint64, int8..int64,
// float32, float64 (sizes must match the declaration) or []byte for any
// parameter (byte arrays, structs). Device pointers are uint64.
func (m *Module) Launch(kernel string, cfg Config, args ...any) (*Stats, error) {
	k, ok := m.funcs[kernel]
	if !ok || !k.entry {
		return nil, fmt.Errorf("sim: no kernel %q in module (kernels: %s)", kernel, strings.Join(m.Kernels(), ", "))
	}
	for _, d := range []struct {
		what string
		v    Dim3
	}{{"grid", cfg.Grid}, {"block", cfg.Block}} {
		if d.v.X <= 0 || d.v.Y <= 0 || d.v.Z <= 0 {
			return nil, fmt.Errorf("sim: %s dimensions %v must be positive", d.what, d.v)
		}
	}
	if cfg.Grid.X > math.MaxInt32 || cfg.Grid.Y > 65535 || cfg.Grid.Z > 65535 || int64(cfg.Grid.X)*int64(cfg.Grid.Y)*int64(cfg.Grid.Z) > 1<<40 {
		return nil, fmt.Errorf("sim: grid %v too large", cfg.Grid)
	}
	if cfg.Block.X > 1024 || cfg.Block.Y > 1024 || cfg.Block.Z > 64 || cfg.Block.count() > MaxThreadsPerBlock {
		return nil, fmt.Errorf("sim: block %v exceeds %d threads", cfg.Block, MaxThreadsPerBlock)
	}
	if r := k.reqntid; len(r) > 0 {
		want := Dim3{r[0], 1, 1}
		if len(r) > 1 {
			want.Y = r[1]
		}
		if len(r) > 2 {
			want.Z = r[2]
		}
		if want != cfg.Block {
			return nil, fmt.Errorf("sim: kernel %s requires block %v (.reqntid), launched with %v", kernel, want, cfg.Block)
		}
	}
	if r := k.maxntid; len(r) > 0 {
		lim := 1
		for _, v := range r {
			lim *= v
		}
		if cfg.Block.count() > lim {
			return nil, fmt.Errorf("sim: kernel %s allows at most %d threads per block (.maxntid), launched with %v", kernel, lim, cfg.Block)
		}
	}
	if cfg.SharedBytes < 0 {
		return nil, fmt.Errorf("sim: negative dynamic shared memory")
	}
	static := k.shared
	if k.dynShared || cfg.SharedBytes > 0 {
		static = int(alignUp(int64(static), 16))
	}
	if static+cfg.SharedBytes > MaxSharedPerBlock {
		return nil, fmt.Errorf("sim: %d bytes of shared memory per block (%d static + %d dynamic) exceed %d",
			static+cfg.SharedBytes, static, cfg.SharedBytes, MaxSharedPerBlock)
	}
	params, err := packParams(kernel, k, args)
	if err != nil {
		return nil, err
	}
	l := &launch{m: m, k: k, cfg: cfg, params: params, check: !cfg.NoCheck, shared: static + cfg.SharedBytes, dynBytes: cfg.SharedBytes}
	m.dev.materializeAll()
	l.startDep()
	defer l.endDep()
	if l.cfg.MaxSteps <= 0 {
		l.cfg.MaxSteps = defaultMaxSteps
	}
	if l.cfg.MaxLaunchSteps <= 0 {
		l.cfg.MaxLaunchSteps = defaultMaxLaunchSteps
	}
	nblocks := cfg.Grid.count()
	// Every warp runs at least one instruction: a grid that cannot fit the budget is refused now.
	if least := float64(nblocks) * float64((cfg.Block.count()+31)/32+blockCost); least > float64(l.cfg.MaxLaunchSteps) {
		return nil, fmt.Errorf("sim: kernel %s: grid %v × block %v is at least %.0f warp instructions to simulate (a block costs %d to start), more than a launch's budget of %d",
			kernel, cfg.Grid, cfg.Block, least, blockCost, l.cfg.MaxLaunchSteps)
	}
	var work atomic.Int64
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Every thread of a running block holds the module's whole register file.
	regBytes := int64(m.nregs) * 8 * 32 * int64((cfg.Block.count()+31)/32)
	if regBytes > maxRegBytes {
		return nil, fmt.Errorf("sim: kernel %s: the module's %d registers × %d threads need %d MiB of simulated registers per block, more than the simulator's %d MiB",
			kernel, m.nregs, cfg.Block.count(), regBytes>>20, maxRegBytes>>20)
	}
	workers = int(min(int64(workers), maxRegBytes/regBytes))
	if cfg.RaceGlobal {
		l.grace = newGlobalRace()
	}
	if cfg.RaceGlobal || cfg.Order != InOrder {
		workers = 1
	}
	workers = min(workers, nblocks)
	order := cfg.Order.perm(nblocks, cfg.Seed)
	var next atomic.Int64
	stats := make([]Stats, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b := newBlock(l)
			for !l.stop.Load() {
				i := int(next.Add(1) - 1)
				if i >= nblocks {
					break
				}
				i = order(i)
				if err := b.run(i); err != nil {
					l.fail(i, err)
				}
				if work.Add(b.steps+blockCost) > l.cfg.MaxLaunchSteps {
					l.fail(nblocks, fmt.Errorf("sim: kernel %s: grid %v × block %v did not finish within a launch's budget of %d warp instructions (an endless loop, or more work than the simulator runs)",
						kernel, cfg.Grid, cfg.Block, l.cfg.MaxLaunchSteps))
				}
			}
			stats[w] = b.stats
		}(w)
	}
	wg.Wait()
	total := &Stats{}
	for i := range stats {
		total.Add(&stats[i])
	}
	if l.err != nil {
		return total, l.err
	}
	return total, nil
}

func packParams(kernel string, k *function, args []any) ([]byte, error) {
	if len(args) != len(k.params) {
		return nil, fmt.Errorf("sim: kernel %s takes %d parameters, got %d arguments", kernel, len(k.params), len(args))
	}
	buf := make([]byte, k.paramSize)
	for i, a := range args {
		p := k.params[i]
		var b []byte
		switch v := a.(type) {
		case []byte:
			b = v
		case uint8:
			b = []byte{v}
		case int8:
			b = []byte{byte(v)}
		case uint16:
			b = binary.LittleEndian.AppendUint16(nil, v)
		case int16:
			b = binary.LittleEndian.AppendUint16(nil, uint16(v))
		case uint32:
			b = binary.LittleEndian.AppendUint32(nil, v)
		case int32:
			b = binary.LittleEndian.AppendUint32(nil, uint32(v))
		case uint64:
			b = binary.LittleEndian.AppendUint64(nil, v)
		case int64:
			b = binary.LittleEndian.AppendUint64(nil, uint64(v))
		case float32:
			b = binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))
		case float64:
			b = binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
		default:
			return nil, fmt.Errorf("sim: argument %d (%s): unsupported Go type %T", i, p.Name, a)
		}
		if len(b) != p.Size {
			return nil, fmt.Errorf("sim: argument %d (%s): parameter .%s has %d bytes, argument %T has %d", i, p.Name, p.Type, p.Size, a, len(b))
		}
		copy(buf[p.off:], b)
	}
	return buf, nil
}

// Stats are the counters of one launch.
type Stats struct {
	WarpInsts   int64             // warp-level instructions issued
	ThreadInsts int64             // thread-level instructions executed (active, guard true)
	Classes     [NumClasses]int64 // warp instructions by class

	GlobalLoads         int64 // warp-level global load requests
	GlobalStores        int64
	GlobalLoadBytes     int64 // bytes the threads asked for (a word several lanes read counts once)
	GlobalStoreBytes    int64
	GlobalLoadSectors   int64 // distinct 32-byte sectors per request, summed
	GlobalStoreSectors  int64
	SharedRequests      int64 // warp-level shared loads, stores and ldmatrix
	SharedWavefronts    int64 // wavefronts those needed
	SharedBankConflicts int64 // wavefronts beyond the conflict-free minimum
	Barriers            int64 // block-wide barrier completions
	Blocks              int64
}

// Add accumulates o into s (for totals over several launches).
func (s *Stats) Add(o *Stats) {
	s.WarpInsts += o.WarpInsts
	s.ThreadInsts += o.ThreadInsts
	for i := range s.Classes {
		s.Classes[i] += o.Classes[i]
	}
	s.GlobalLoads += o.GlobalLoads
	s.GlobalStores += o.GlobalStores
	s.GlobalLoadBytes += o.GlobalLoadBytes
	s.GlobalStoreBytes += o.GlobalStoreBytes
	s.GlobalLoadSectors += o.GlobalLoadSectors
	s.GlobalStoreSectors += o.GlobalStoreSectors
	s.SharedRequests += o.SharedRequests
	s.SharedWavefronts += o.SharedWavefronts
	s.SharedBankConflicts += o.SharedBankConflicts
	s.Barriers += o.Barriers
	s.Blocks += o.Blocks
}

// Class returns the warp instruction count of a class by name ("fp32", "ld.global", ...).
func (s *Stats) Class(name string) int64 {
	for i, n := range classNames {
		if n == name {
			return s.Classes[i]
		}
	}
	return 0
}

func efficiency(bytes, sectors int64) float64 {
	if sectors == 0 {
		return 1
	}
	return float64(bytes) / float64(sectors*32)
}

// String formats the counters as the CLI prints them.
func (s *Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "blocks                %d\n", s.Blocks)
	fmt.Fprintf(&b, "warp instructions     %d\n", s.WarpInsts)
	fmt.Fprintf(&b, "thread instructions   %d\n", s.ThreadInsts)
	idx := make([]int, 0, NumClasses)
	for i := range s.Classes {
		if s.Classes[i] != 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, c int) bool { return s.Classes[idx[a]] > s.Classes[idx[c]] })
	for _, i := range idx {
		fmt.Fprintf(&b, "  %-19s %d\n", classNames[i], s.Classes[i])
	}
	fmt.Fprintf(&b, "global loads          %d requests, %d bytes, %d sectors (%.1f%% efficiency)\n",
		s.GlobalLoads, s.GlobalLoadBytes, s.GlobalLoadSectors, 100*efficiency(s.GlobalLoadBytes, s.GlobalLoadSectors))
	fmt.Fprintf(&b, "global stores         %d requests, %d bytes, %d sectors (%.1f%% efficiency)\n",
		s.GlobalStores, s.GlobalStoreBytes, s.GlobalStoreSectors, 100*efficiency(s.GlobalStoreBytes, s.GlobalStoreSectors))
	fmt.Fprintf(&b, "shared accesses       %d requests, %d wavefronts, %d bank conflicts\n",
		s.SharedRequests, s.SharedWavefronts, s.SharedBankConflicts)
	fmt.Fprintf(&b, "barriers              %d\n", s.Barriers)
	return b.String()
}
