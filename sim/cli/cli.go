// Package cli implements the "gcomp sim" command: run one kernel of a PTX
// file on the simulator, with arguments from .npy files and scalars, and
// write the outputs as .npy files.
//
//	gcomp sim add.ptx --entry add --grid 4 --block 256 \
//	    --arg in=a.npy --arg in=b.npy --arg out=c:f32:1000 --arg u32=1000 --stats
//
// Every failure — a bad flag, an unreadable file, a PTX syntax error, a
// check that fires — is one line on stderr and exit status 1.
package cli

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensorio"
)

const usage = `usage: gcomp sim FILE.ptx --entry NAME --grid X[,Y[,Z]] --block X[,Y[,Z]]
                 [--shared BYTES] [--arg SPEC]... [--output-dir DIR] [--stats] [--no-check]
                 [--race-global] [--block-order in-order|reverse|random] [--seed N]
                 [--memory-limit BYTES]

Runs kernel NAME of FILE.ptx on the PTX simulator. Each --arg gives the next
kernel parameter, in order:
  in=FILE.npy         a device buffer holding the file's data; the parameter gets its address
  out=NAME:DTYPE:N    a fresh, poisoned buffer of N elements of DTYPE (f32, f16, bf16, f64,
                      i32, u32, i64, u8), written to DIR/NAME.npy after the run
                      (bf16 is widened to f32: NumPy has no bf16)
  u32=V s32=V u64=V s64=V f32=V f64=V   a scalar
Checks (memcheck, racecheck, synccheck) are on unless --no-check.
--race-global also checks for races on global memory between blocks (blocks
then run one at a time); --block-order runs the blocks one at a time, in index
order, in reverse or in a random order drawn from --seed (default 1), so a
kernel whose blocks race gives that order's result. --memory-limit caps the simulated
device's memory (a number of bytes, or with K, M, G or T; default half the
host's memory, at most 8G). FILE.ptx may hold at most 256 MiB.
`

// Main runs the command with args (after "sim") and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) (status int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "gcomp sim: internal error: %v\n", r)
			status = 1
		}
	}()
	if err := run(args, stdout, stderr); err != nil {
		if err == errHelp {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "gcomp sim: %v\n", err)
		return 1
	}
	return 0
}

var errHelp = fmt.Errorf("help")

type options struct {
	file, entry, outDir string
	grid, block         sim.Dim3
	shared              int
	args                []string
	stats, noCheck      bool
	raceGlobal          bool
	order               sim.BlockOrder
	orderSet            bool // --block-order given: blocks run one at a time
	seed                uint64
	memLimit            int64
}

func parseArgs(args []string) (*options, error) {
	o := &options{outDir: ".", seed: 1}
	var haveGrid, haveBlock bool
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			if o.file != "" {
				return nil, fmt.Errorf("more than one PTX file: %s and %s", o.file, a)
			}
			o.file = a
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "h", "help":
			return nil, errHelp
		case "stats", "no-check", "race-global":
			if hasVal {
				return nil, fmt.Errorf("flag --%s takes no value", name)
			}
			switch name {
			case "stats":
				o.stats = true
			case "no-check":
				o.noCheck = true
			default:
				o.raceGlobal = true
			}
			continue
		case "entry", "grid", "block", "shared", "arg", "output-dir", "block-order", "seed", "memory-limit":
		default:
			return nil, fmt.Errorf("unknown flag %s (see gcomp sim --help)", a)
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			val = args[i]
		}
		var err error
		switch name {
		case "entry":
			o.entry = val
		case "grid":
			o.grid, err = parseDim(val)
			haveGrid = true
		case "block":
			o.block, err = parseDim(val)
			haveBlock = true
		case "shared":
			o.shared, err = strconv.Atoi(val)
			if err != nil || o.shared < 0 {
				err = fmt.Errorf("bad byte count")
			}
		case "arg":
			o.args = append(o.args, val)
		case "output-dir":
			o.outDir = val
		case "block-order":
			o.order, err = sim.ParseBlockOrder(val)
			o.orderSet = true
		case "seed":
			o.seed, err = strconv.ParseUint(val, 10, 64)
			if err != nil {
				err = fmt.Errorf("not a non-negative integer")
			}
		case "memory-limit":
			o.memLimit, err = parseBytes(val)
		}
		if err != nil {
			return nil, fmt.Errorf("--%s %s: %v", name, val, err)
		}
	}
	switch {
	case o.file == "":
		return nil, fmt.Errorf("no PTX file given (see gcomp sim --help)")
	case o.entry == "":
		return nil, fmt.Errorf("--entry NAME is required")
	case !haveGrid:
		return nil, fmt.Errorf("--grid X[,Y[,Z]] is required")
	case !haveBlock:
		return nil, fmt.Errorf("--block X[,Y[,Z]] is required")
	case o.block.X*o.block.Y*o.block.Z > sim.MaxThreadsPerBlock:
		return nil, fmt.Errorf("--block %d,%d,%d exceeds %d threads", o.block.X, o.block.Y, o.block.Z, sim.MaxThreadsPerBlock)
	}
	return o, nil
}

// parseBytes reads a byte count: digits, optionally with a K, M, G or T
// suffix (powers of 1024).
func parseBytes(s string) (int64, error) {
	shift := 0
	if i := strings.IndexAny(s, "KMGT"); i >= 0 && i == len(s)-1 {
		shift = 10 * (1 + strings.IndexByte("KMGT", s[i]))
		s = s[:i]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v > math.MaxInt64>>shift {
		return 0, fmt.Errorf("not a positive byte count (digits, optionally followed by K, M, G or T)")
	}
	return v << shift, nil
}

// readPTX reads a PTX file of at most sim.MaxPTXBytes, checking the size
// before reading (a device such as /dev/zero has no size and is read only
// up to the limit).
func readPTX(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a PTX file", path)
	}
	tooBig := fmt.Errorf("%s: more than %d MiB, the largest PTX file the simulator reads", path, sim.MaxPTXBytes>>20)
	if st.Mode().IsRegular() && st.Size() > sim.MaxPTXBytes {
		return nil, tooBig
	}
	b, err := io.ReadAll(io.LimitReader(f, sim.MaxPTXBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > sim.MaxPTXBytes {
		return nil, tooBig
	}
	return b, nil
}

func parseDim(s string) (sim.Dim3, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 3 {
		return sim.Dim3{}, fmt.Errorf("at most three dimensions")
	}
	d := [3]int{1, 1, 1}
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v <= 0 || v > 1<<31-1 {
			return sim.Dim3{}, fmt.Errorf("dimension %q is not a positive integer", p)
		}
		d[i] = v
	}
	return sim.Dim3{X: d[0], Y: d[1], Z: d[2]}, nil
}

// output is a buffer to write back after the run.
type output struct {
	name, dtype string
	n           int
	addr        uint64
}

var outSizes = map[string]int{"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "u32": 4, "i64": 8, "u8": 1}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseArgs(args)
	if err != nil {
		return err
	}
	src, err := readPTX(o.file)
	if err != nil {
		return err
	}
	dev := sim.NewDevice()
	if o.memLimit != 0 {
		if err := dev.SetMemoryLimit(o.memLimit); err != nil {
			return fmt.Errorf("--memory-limit: %v", strings.TrimPrefix(err.Error(), "sim: "))
		}
	}
	m, err := dev.Load(string(src))
	if err != nil {
		return fmt.Errorf("%s:%v", o.file, err)
	}
	params, err := m.Params(o.entry)
	if err != nil {
		return fmt.Errorf("%s: %v", o.file, strings.TrimPrefix(err.Error(), "sim: "))
	}
	if len(o.args) != len(params) {
		return fmt.Errorf("kernel %s takes %d parameters, %d --arg given", o.entry, len(params), len(o.args))
	}
	var vals []any
	var outs []output
	for i, spec := range o.args {
		p := params[i]
		v, out, err := makeArg(dev, spec, p)
		if err != nil {
			return fmt.Errorf("--arg %s (parameter %d, %s .%s): %v", spec, i, p.Name, p.Type, err)
		}
		if out != nil {
			outs = append(outs, *out)
		}
		vals = append(vals, v)
	}
	cfg := sim.Config{Grid: o.grid, Block: o.block, SharedBytes: o.shared, NoCheck: o.noCheck,
		RaceGlobal: o.raceGlobal, Order: o.order, Seed: o.seed}
	if o.orderSet {
		cfg.Workers = 1 // in-order too: the order asked for is the order run
	}
	st, err := m.Launch(o.entry, cfg, vals...)
	if err != nil {
		return fmt.Errorf("%s: %v", o.file, strings.TrimPrefix(err.Error(), "sim: "))
	}
	if len(outs) > 0 {
		if err := os.MkdirAll(o.outDir, 0o755); err != nil {
			return err
		}
	}
	for _, out := range outs {
		if err := writeOutput(dev, o.outDir, out); err != nil {
			return err
		}
	}
	if o.stats {
		fmt.Fprint(stdout, st.String())
	}
	return nil
}

func makeArg(dev *sim.Device, spec string, p sim.Param) (any, *output, error) {
	kind, val, ok := strings.Cut(spec, "=")
	if !ok {
		return nil, nil, fmt.Errorf("expected KIND=VALUE (in=, out=, u32=, s32=, u64=, s64=, f32=, f64=)")
	}
	needPtr := func() error {
		if p.Size != 8 {
			return fmt.Errorf("a buffer needs a 64-bit pointer parameter, this one has %d bytes", p.Size)
		}
		return nil
	}
	switch kind {
	case "in":
		if err := needPtr(); err != nil {
			return nil, nil, err
		}
		a, err := tensorio.ReadNPYFile(val)
		if err != nil {
			return nil, nil, err
		}
		addr, err := dev.Alloc(len(a.Data))
		if err != nil {
			return nil, nil, err
		}
		if err := dev.Write(addr, a.Data); err != nil {
			return nil, nil, err
		}
		dev.Label(addr, p.Name+" = "+val)
		return addr, nil, nil
	case "out":
		if err := needPtr(); err != nil {
			return nil, nil, err
		}
		parts := strings.Split(val, ":")
		if len(parts) != 3 {
			return nil, nil, fmt.Errorf("expected out=NAME:DTYPE:N")
		}
		name, dtype := parts[0], parts[1]
		if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
			return nil, nil, fmt.Errorf("bad output name %q", name)
		}
		size, ok := outSizes[dtype]
		if !ok {
			return nil, nil, fmt.Errorf("unknown dtype %q (want f32, f16, bf16, f64, i32, u32, i64 or u8)", dtype)
		}
		n, err := strconv.Atoi(parts[2])
		if err != nil || n <= 0 || n > 1<<34/size {
			return nil, nil, fmt.Errorf("bad element count %q", parts[2])
		}
		addr, err := dev.Alloc(n * size)
		if err != nil {
			return nil, nil, err
		}
		dev.Label(addr, p.Name+" = out "+name)
		return addr, &output{name, dtype, n, addr}, nil
	}
	var bits uint64
	var size int
	var err error
	switch kind {
	case "u32":
		bits, err = strconv.ParseUint(val, 0, 32)
		size = 4
	case "u64":
		bits, err = strconv.ParseUint(val, 0, 64)
		size = 8
	case "s32":
		var v int64
		v, err = strconv.ParseInt(val, 0, 32)
		bits, size = uint64(uint32(v)), 4
	case "s64":
		var v int64
		v, err = strconv.ParseInt(val, 0, 64)
		bits, size = uint64(v), 8
	case "f32":
		var v float64
		v, err = strconv.ParseFloat(val, 32)
		bits, size = uint64(math.Float32bits(float32(v))), 4
	case "f64":
		var v float64
		v, err = strconv.ParseFloat(val, 64)
		bits, size = math.Float64bits(v), 8
	default:
		return nil, nil, fmt.Errorf("unknown argument kind %q", kind)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("bad %s value %q", kind, val)
	}
	if p.Size != size {
		return nil, nil, fmt.Errorf("parameter has %d bytes, a %s has %d", p.Size, kind, size)
	}
	b := make([]byte, size)
	if size == 4 {
		binary.LittleEndian.PutUint32(b, uint32(bits))
	} else {
		binary.LittleEndian.PutUint64(b, bits)
	}
	return b, nil, nil
}

func writeOutput(dev *sim.Device, dir string, out output) error {
	data := make([]byte, out.n*outSizes[out.dtype])
	if err := dev.Read(out.addr, data); err != nil {
		return err
	}
	dtype := out.dtype
	if dtype == "bf16" {
		// NumPy has no bf16; widening to f32 is exact.
		wide := make([]byte, 2*len(data))
		for i := 0; i < out.n; i++ {
			binary.LittleEndian.PutUint32(wide[4*i:], uint32(binary.LittleEndian.Uint16(data[2*i:]))<<16)
		}
		data, dtype = wide, "f32"
	}
	path := filepath.Join(dir, out.name+".npy")
	return tensorio.WriteNPYFile(path, &tensorio.Array{DType: dtype, Shape: []int{out.n}, Data: data})
}
