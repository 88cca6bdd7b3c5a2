package sim

import (
	"fmt"
	"math"
	"strings"

	"github.com/gcomp/gcomp/sim/ptx"
)

// Operand kinds of the decoded form.
const (
	oNone uint8 = iota
	oReg
	oImm
	oSink    // "_": result discarded
	oClock   // %clock
	oClock64 // %clock64, %globaltimer
	oClockHi // %globaltimer_hi
)

// opnd is a decoded operand. For a destination register imm holds the
// register's width mask, so a write is regs[i] = v & imm.
type opnd struct {
	kind uint8
	reg  int32
	imm  uint64
}

type opcode uint8

const (
	opALU opcode = iota // d = fn(s0, s1, s2, s3)
	opMov
	opPack   // mov.bN d, {a, b, ...}
	opUnpack // mov.bN {a, b, ...}, s
	opLd
	opSt
	opCvta
	opCvtaTo
	opSetp
	opCarry // add/sub with .cc and addc/subc
	opBra
	opCall
	opRet
	opExit
	opTrap
	opNop
	opGridDep // griddepcontrol (griddep.go)
	opShfl
	opVote
	opActivemask
	opMatch
	opRedux
	opBar     // bar.sync / barrier.sync / bar.arrive / bar.red
	opBarWarp // bar.warp.sync: a rendezvous of the membermask's lanes
	opAtom
	opLdmatrix
	opMma
	opCpAsync
	opCpCommit
	opCpWait
)

// aluFn computes one lane's result from up to four source values.
type aluFn func(in *inst, a, b, c, d uint64) uint64

// inst is one decoded instruction.
type inst struct {
	op      opcode
	class   Class
	t, t2   ptype
	t3      ptype // mma accumulator type
	rnd     rmode
	ftz     bool
	sat     bool
	negc    bool  // the predicate operand is negated: !p
	aligned bool  // bar.sync: a warp's lanes must use the same instruction
	flag    uint8 // op-specific: compare op, shfl mode, vote mode, atomic op, barrier kind
	sem     uint8 // ld, st, atom, red and fences: ordering semantics (semStrong ...)
	bop     uint8 // setp boolean combination
	space   space
	n       uint8 // vector width, source count, or call argument count
	gneg    bool
	guard   int32 // predicate register, -1 if unguarded
	d       [4]opnd
	s       [4]opnd
	a       opnd  // address base
	off     int64 // address offset
	fn      aluFn
	target  int32 // branch target pc
	callee  *function
	args    []int64 // call: caller-frame offsets of arguments, then of return values
	nret    int
	more    []opnd // mma/ldmatrix operands beyond d and s
	line    int32
	f       *function
	text    string
}

// function is a decoded .entry or .func.
type function struct {
	name      string
	entry     bool
	start     int32
	end       int32
	params    []param
	rets      []param
	frame     int64 // offset of this function's frame in per-thread local memory
	paramSize int   // kernel parameter buffer size
	shared    int   // static shared bytes used by this kernel (module and kernel variables)
	dynShared bool
	reqntid   []int
	maxntid   []int
}

// param is a parameter's place: an offset in the kernel parameter buffer
// (entries) or in the function's frame (funcs).
type param struct {
	Name  string
	Type  string
	Size  int
	Align int
	off   int64
}

// Module is PTX text decoded once into executable form and loaded on a device
// (module-scope .global and .const variables are allocated there).
type Module struct {
	dev       *Device
	prog      []inst
	funcs     map[string]*function
	order     []string
	nregs     int
	frameSize int64
	shared    int // module-scope static shared bytes
	globals   map[string]*allocation
	version   string
	target    []string
	triggers  bool // some instruction is griddepcontrol.launch_dependents (griddep.go)
}

// MaxPTXBytes is the largest PTX text a caller should read from a file
// for Load; the CLI checks a file's size against it before reading.
const MaxPTXBytes = 256 << 20

// Per-thread and per-launch limits of the simulated device.
const (
	maxLocalBytes  = 512 << 10
	maxParamBytes  = 32764
	maxGlobalVar   = 1 << 30
	maxSharedBytes = 1 << 30 // static shared is checked against the real limit at launch
	maxModuleRegs  = 1 << 22 // registers of all functions of a module together
	// maxRegBytes bounds the host memory the register files of the blocks
	// running at once take: every thread holds every register of the module
	// (8 bytes each), and Launch runs fewer blocks at once, or refuses,
	// rather than exceed it.
	maxRegBytes = 1 << 30
)

// Special registers occupy the first register slots; their per-lane values
// are filled in when a warp starts.
var specialRegs = []string{
	"%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z",
	"%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z",
	"%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid",
	"%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge",
	"%warpsize", "%cc", "%dynamic_smem_size", "%total_smem_size",
}

const (
	regTid = iota
	_
	_
	regNtid
	_
	_
	regCtaid
	_
	_
	regNctaid
	_
	_
	regLaneid
	regWarpid
	regNwarpid
	regSmid
	regNsmid
	regGridid
	regLanemaskEq
	regLanemaskLt
	regLanemaskLe
	regLanemaskGt
	regLanemaskGe
	regWarpsize
	regCC
	regDynSmem
	regTotalSmem
	nSpecial
)

var specialIndex = func() map[string]int {
	m := map[string]int{}
	for i, s := range specialRegs {
		m[s] = i
	}
	return m
}()

// SyntaxError is a parse or decode error at a line and column of the PTX text.
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

type sym struct {
	sp   space
	addr int64
	size int // bytes, for checking call arguments
}

type regInfo struct {
	idx int32
	t   ptype
}

type loader struct {
	m       *Module
	mod     *ptx.Module
	syms    map[string]sym // module scope
	fsyms   map[string]sym
	regs    *regTable
	labels  map[string]int32
	fn      *function
	pending []func() error // call targets resolved after all functions are known
}

func errAt(p ptx.Pos, format string, args ...any) error {
	return &SyntaxError{p.Line, p.Col, fmt.Sprintf(format, args...)}
}

// Load parses and decodes PTX text and allocates its module-scope variables
// on the device.
func (d *Device) Load(src string) (*Module, error) {
	pm, err := ptx.Parse(src)
	if err != nil {
		if pe, ok := err.(*ptx.Error); ok {
			return nil, &SyntaxError{pe.Pos.Line, pe.Pos.Col, pe.Msg}
		}
		return nil, err
	}
	m := &Module{dev: d, funcs: map[string]*function{}, globals: map[string]*allocation{}, nregs: nSpecial,
		version: pm.Version, target: pm.Target}
	ld := &loader{m: m, mod: pm, syms: map[string]sym{}}
	if pm.AddressSize != 0 && pm.AddressSize != 64 {
		return nil, &SyntaxError{1, 1, fmt.Sprintf(".address_size %d is not supported (only 64)", pm.AddressSize)}
	}
	if err := ld.vars(); err != nil {
		return nil, err
	}
	for _, f := range pm.Funcs {
		fn := &function{name: f.Name, entry: f.Entry, reqntid: f.ReqNTID, maxntid: f.MaxNTID}
		m.funcs[f.Name] = fn
		m.order = append(m.order, f.Name)
	}
	for _, f := range pm.Funcs {
		if err := ld.function(f); err != nil {
			return nil, err
		}
	}
	for _, p := range ld.pending {
		if err := p(); err != nil {
			return nil, err
		}
	}
	for i := range m.prog {
		m.triggers = m.triggers || m.prog[i].op == opGridDep && m.prog[i].sem&semDepWait == 0
	}
	return m, nil
}

// vars lays out module-scope variables: .global/.const in device memory,
// .shared at the start of every block's shared memory.
func (ld *loader) vars() error {
	for _, v := range ld.mod.Vars {
		switch v.Space {
		case "global", "const":
			if v.Size() > maxGlobalVar || v.Size() < 0 {
				return errAt(v.Pos, "variable %s is too large", v.Name)
			}
			if v.Extern {
				return errAt(v.Pos, "extern %s variable %s is not supported", v.Space, v.Name)
			}
			// Global variables are zero-initialized as on the GPU; only
			// the initializer's bytes are kept until the variable is used.
			image, err := ld.initVar(v)
			if err != nil {
				return err
			}
			a, err := ld.m.dev.allocVar(v.Size(), v.Name, image)
			if err != nil {
				return err
			}
			a.rdonly = v.Space == "const"
			ld.m.globals[v.Name] = a
			ld.syms[v.Name] = sym{spGlobal, int64(a.addr), v.Size()}
		case "shared":
			if len(v.Dims) > 0 && v.Dims[0] == 0 {
				ld.syms[v.Name] = sym{spShared, -1, 0} // dynamic: placed after the kernel's static shared memory
				continue
			}
			if v.Size() < 0 || v.Size() > maxSharedBytes {
				return errAt(v.Pos, "shared variable %s is too large", v.Name)
			}
			off := alignUp(int64(ld.m.shared), int64(v.Alignment()))
			ld.syms[v.Name] = sym{spShared, off, v.Size()}
			ld.m.shared = int(off) + v.Size()
		default:
			return errAt(v.Pos, "module-scope .%s variable %s is not supported", v.Space, v.Name)
		}
	}
	return nil
}

func alignUp(x, a int64) int64 { return (x + a - 1) / a * a }

// initVar returns the bytes v's initializer gives its first elements.
func (ld *loader) initVar(v *ptx.Var) ([]byte, error) {
	t, ok := typeByName[v.Type]
	if !ok && len(v.Init) > 0 {
		return nil, errAt(v.Pos, "cannot initialize variable of type .%s", v.Type)
	}
	es := t.size()
	if len(v.Init)*es > v.Size() {
		return nil, errAt(v.Pos, "too many initializers for %s", v.Name)
	}
	data := make([]byte, len(v.Init)*es)
	for i, o := range v.Init {
		var bits uint64
		switch o.Kind {
		case ptx.OpInt:
			bits = uint64(o.Int)
			if t.isFloat() {
				bits = floatBits(float64(o.Int), t)
			}
		case ptx.OpFloat:
			bits = immFloat(o, t)
		case ptx.OpName:
			s, ok := ld.syms[o.Name]
			if !ok || s.sp != spGlobal {
				return nil, errAt(o.Pos, "initializer %s is not a global variable", o.Name)
			}
			bits = uint64(s.addr)
		default:
			return nil, errAt(o.Pos, "unsupported initializer %s", o)
		}
		for j := 0; j < es; j++ {
			data[i*es+j] = byte(bits >> (8 * j))
		}
	}
	return data, nil
}

// floatBits encodes x as a value of float type t (round to nearest).
func floatBits(x float64, t ptype) uint64 {
	switch t {
	case tF64:
		return math.Float64bits(x)
	case tF16:
		return encode(x, fmtF16, rn)
	case tBF16:
		return encode(x, fmtBF16, rn)
	}
	return toF32(x, rn)
}

// immFloat converts a float literal to the bits of type t. 0f literals used
// with .b32/.f32 keep their exact bits.
func immFloat(o ptx.Operand, t ptype) uint64 {
	x := math.Float64frombits(o.Bits)
	if o.F32 {
		if t.size() == 4 && t != tF16x2 && t != tBF16x2 {
			return o.Bits
		}
		x = float64(math.Float32frombits(uint32(o.Bits)))
	} else if t == tF64 || t.size() == 8 {
		return o.Bits
	}
	if t.isFloat() {
		return floatBits(x, t)
	}
	return floatBits(x, tF32) & t.mask()
}

func (ld *loader) function(f *ptx.Func) error {
	m := ld.m
	fn := m.funcs[f.Name]
	ld.fn = fn
	ld.fsyms = map[string]sym{}
	ld.regs = newRegTable()
	ld.labels = map[string]int32{}
	fn.start = int32(len(m.prog))
	if !f.HasBody {
		fn.start = -1
	}
	fn.frame = m.frameSize
	frame := int64(0)
	place := func(v *ptx.Var, sp space, off *int64) (param, error) {
		sz := v.Size()
		if sz <= 0 || sz > maxLocalBytes {
			return param{}, errAt(v.Pos, "parameter %s has no size", v.Name)
		}
		*off = alignUp(*off, int64(v.Alignment()))
		p := param{Name: v.Name, Type: v.Type, Size: sz, Align: v.Alignment(), off: *off}
		base := int64(0)
		if sp == spLocal {
			base = fn.frame
		}
		ld.fsyms[v.Name] = sym{sp, base + *off, sz}
		*off += int64(sz)
		return p, nil
	}
	for _, v := range append(append([]*ptx.Var{}, f.Params...), f.Rets...) {
		if v.Space == "reg" {
			return errAt(v.Pos, "register parameter %s is not supported (use .param)", v.Name)
		}
	}
	for _, v := range f.Params {
		sp, off := spLocal, &frame
		var kp int64
		if f.Entry {
			sp, off = spKParam, &kp
			kp = int64(fn.paramSize)
		}
		p, err := place(v, sp, off)
		if err != nil {
			return err
		}
		fn.params = append(fn.params, p)
		if f.Entry {
			fn.paramSize = int(kp)
		}
	}
	for _, v := range f.Rets {
		p, err := place(v, spLocal, &frame)
		if err != nil {
			return err
		}
		fn.rets = append(fn.rets, p)
	}
	fn.shared = m.shared
	for _, v := range f.Vars {
		switch v.Space {
		case "param", "local":
			if _, err := place(v, spLocal, &frame); err != nil {
				return err
			}
		case "shared":
			if !f.Entry {
				return errAt(v.Pos, ".shared variables inside a .func are not supported")
			}
			if len(v.Dims) > 0 && v.Dims[0] == 0 {
				ld.fsyms[v.Name] = sym{spShared, -1, 0}
				continue
			}
			if v.Size() < 0 || v.Size() > maxSharedBytes {
				return errAt(v.Pos, "shared variable %s is too large", v.Name)
			}
			off := alignUp(int64(fn.shared), int64(v.Alignment()))
			ld.fsyms[v.Name] = sym{spShared, off, v.Size()}
			fn.shared = int(off) + v.Size()
		default:
			return errAt(v.Pos, ".%s variable inside a function is not supported", v.Space)
		}
	}
	m.frameSize = alignUp(fn.frame+frame, 16)
	if m.frameSize > maxLocalBytes {
		return errAt(f.Pos, "%s: %d bytes of local memory and parameters per thread exceed %d", f.Name, m.frameSize, maxLocalBytes)
	}
	if fn.paramSize > maxParamBytes {
		return errAt(f.Pos, "%s: %d bytes of kernel parameters exceed %d", f.Name, fn.paramSize, maxParamBytes)
	}
	for _, r := range f.Regs {
		t, ok := typeByName[r.Type]
		if !ok {
			return errAt(r.Pos, "bad register type .%s", r.Type)
		}
		if r.Count == 0 {
			if !ld.regs.declareOne(r.Name, int32(m.nregs), t) {
				return errAt(r.Pos, "register %s declared twice", r.Name)
			}
			m.nregs++
		} else {
			if dup := ld.regs.declareRange(r.Name, r.Count, int32(m.nregs), t); dup != "" {
				return errAt(r.Pos, "register %s declared twice", dup)
			}
			m.nregs += r.Count
		}
		if m.nregs > maxModuleRegs {
			return errAt(r.Pos, "%s: the module declares %d registers so far, more than the simulator's %d", f.Name, m.nregs, maxModuleRegs)
		}
	}
	pc := fn.start
	for _, s := range f.Body {
		if s.Label != "" {
			if _, dup := ld.labels[s.Label]; dup {
				return errAt(s.Pos, "label %s defined twice", s.Label)
			}
			ld.labels[s.Label] = pc
		} else {
			pc++
		}
	}
	for _, s := range f.Body {
		if s.Inst == nil {
			continue
		}
		in, err := ld.decode(s.Inst)
		if err != nil {
			return err
		}
		m.prog = append(m.prog, in)
	}
	if f.HasBody {
		// Falling off the end of a function returns (kernels exit).
		end := inst{op: opRet, class: ClassControl, guard: -1, line: int32(f.Pos.Line), f: fn, text: "(end of " + f.Name + ")"}
		if f.Entry {
			end.op = opExit
		}
		m.prog = append(m.prog, end)
	}
	fn.end = int32(len(m.prog))
	return nil
}

// opts is an opcode split at its dots, tracking which parts were understood.
type opts struct {
	parts []string
	used  []bool
}

func newOpts(op string) *opts {
	p := strings.Split(op, ".")
	o := &opts{parts: p[1:], used: make([]bool, len(p)-1)}
	return o
}

func (o *opts) has(s string) bool {
	for i, p := range o.parts {
		if p == s {
			o.used[i] = true
			return true
		}
	}
	return false
}

// oneOf returns the first part among choices, or "".
func (o *opts) oneOf(choices ...string) string {
	for i, p := range o.parts {
		for _, c := range choices {
			if p == c {
				o.used[i] = true
				return p
			}
		}
	}
	return ""
}

func (o *opts) types() []ptype {
	var ts []ptype
	for i, p := range o.parts {
		if t, ok := typeByName[p]; ok {
			ts = append(ts, t)
			o.used[i] = true
		}
	}
	return ts
}

// Qualifiers that do not change results in a sequentially consistent
// simulator: memory ordering, scopes, cache and eviction hints.
var ignorable = map[string]bool{
	"volatile": true, "relaxed": true, "acquire": true, "release": true, "acq_rel": true, "sc": true,
	"weak": true, "mmio": true, "cta": true, "gpu": true, "sys": true, "cluster": true,
	"ca": true, "cg": true, "cs": true, "lu": true, "cv": true, "wb": true, "wt": true, "nc": true,
	"uni": true, "aligned": true, "sync": true, "noftz": true,
	"L1::evict_normal": true, "L1::evict_unchanged": true, "L1::evict_first": true, "L1::evict_last": true,
	"L1::no_allocate": true, "L2::evict_normal": true, "L2::evict_first": true, "L2::evict_last": true,
	"L2::64B": true, "L2::128B": true, "L2::256B": true,
}

func (o *opts) leftover() string {
	for i, p := range o.parts {
		if !o.used[i] && !ignorable[p] {
			return p
		}
	}
	return ""
}

func (o *opts) rounding() rmode {
	switch o.oneOf("rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi") {
	case "rn", "rni":
		return rn
	case "rz", "rzi":
		return rz
	case "rm", "rmi":
		return rm
	case "rp", "rpi":
		return rp
	case "rna":
		return rna
	}
	return rnDefault
}
