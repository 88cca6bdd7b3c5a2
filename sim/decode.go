package sim

import (
	"fmt"
	"math"
	"strings"

	"github.com/gcomp/gcomp/sim/ptx"
)

// decode turns one parsed instruction into its executable form.
func (ld *loader) decode(pi *ptx.Inst) (in inst, err error) {
	in = inst{guard: -1, line: int32(pi.Pos.Line), f: ld.fn, text: pi.String()}
	if pi.Guard != "" {
		r, ok := ld.regs.get(pi.Guard)
		if !ok || r.t != tPred {
			return in, errAt(pi.Pos, "guard %s is not a predicate register", pi.Guard)
		}
		in.guard, in.gneg = r.idx, pi.GuardNeg
	}
	o := newOpts(pi.Op)
	name := strings.SplitN(pi.Op, ".", 2)[0]
	d := &decoder{ld: ld, pi: pi, in: &in, o: o}
	defer func() {
		// A malformed operand list the checks above missed is still an
		// error at the instruction, never a crash.
		if r := recover(); r != nil {
			err = errAt(pi.Pos, "%s: malformed instruction (%v)", pi.Op, r)
		}
	}()
	if err := d.run(name); err != nil {
		if _, ok := err.(*SyntaxError); ok {
			return in, err
		}
		return in, errAt(pi.Pos, "%s: %v", pi.Op, err)
	}
	if left := o.leftover(); left != "" {
		return in, errAt(pi.Pos, "unsupported instruction %s (modifier .%s)", pi.Op, left)
	}
	return in, nil
}

type decoder struct {
	ld *loader
	pi *ptx.Inst
	in *inst
	o  *opts
}

func (d *decoder) nargs(n ...int) error {
	for _, k := range n {
		if len(d.pi.Args) == k {
			return nil
		}
	}
	return fmt.Errorf("wrong number of operands (%d)", len(d.pi.Args))
}

func (d *decoder) oneType() (ptype, error) {
	ts := d.o.types()
	if len(ts) != 1 {
		return 0, fmt.Errorf("expected one type")
	}
	return ts[0], nil
}

// src decodes a source operand of type t.
func (d *decoder) src(a ptx.Operand, t ptype) (opnd, error) {
	switch a.Kind {
	case ptx.OpInt:
		v := uint64(a.Int)
		if t.isFloat() && t != tF16x2 && t != tBF16x2 {
			v = floatBits(float64(a.Int), t)
		}
		return opnd{kind: oImm, imm: v & t.mask()}, nil
	case ptx.OpFloat:
		return opnd{kind: oImm, imm: immFloat(a, t)}, nil
	case ptx.OpName:
		if a.Neg {
			return opnd{}, errAt(a.Pos, "negated operand !%s not allowed here", a.Name)
		}
		if r, ok := d.ld.regs.get(a.Name); ok {
			if !typeOK(t, r.t) {
				return opnd{}, errAt(a.Pos, "register %s of type .%s does not fit a .%s operand", a.Name, r.t, t)
			}
			return opnd{kind: oReg, reg: r.idx}, nil
		}
		if i, ok := specialIndex[a.Name]; ok {
			return opnd{kind: oReg, reg: int32(i)}, nil
		}
		switch a.Name {
		case "%clock":
			return opnd{kind: oClock}, nil
		case "%clock64", "%globaltimer":
			return opnd{kind: oClock64}, nil
		case "%globaltimer_lo":
			return opnd{kind: oClock}, nil
		case "%globaltimer_hi":
			return opnd{kind: oClockHi}, nil
		}
		if s, ok := d.ld.lookup(a.Name); ok {
			return opnd{kind: oImm, imm: uint64(s.addr)}, nil
		}
		if _, ok := d.ld.labels[a.Name]; ok {
			return opnd{}, errAt(a.Pos, "label %s used as a value", a.Name)
		}
		return opnd{}, errAt(a.Pos, "undefined name %s", a.Name)
	}
	return opnd{}, errAt(a.Pos, "bad operand %s", a)
}

// typeOK applies the ISA's operand type-checking rules to a register of
// type reg used where the instruction expects type t (tNone: unchecked):
// bit-size types fit every type of their size, signed and unsigned integers
// fit each other, a floating-point type fits only itself, predicates only
// predicates. Sizes may differ (ld, st and cvt allow wider registers; other
// size rules are left to ptxas).
func typeOK(t, reg ptype) bool {
	switch {
	case t == tNone:
		return true
	case t == tPred || reg == tPred:
		return t == reg
	case t.size() != reg.size():
		return true
	case t <= tB128 || reg <= tB128: // .bN
		return true
	case t.isFloat() || reg.isFloat():
		return t == reg
	}
	return true
}

// dstT decodes a destination register that holds a value of type t.
func (d *decoder) dstT(a ptx.Operand, t ptype) (opnd, error) {
	o, err := d.dst(a)
	if err != nil || o.kind != oReg {
		return o, err
	}
	if r, _ := d.ld.regs.get(a.Name); !typeOK(t, r.t) {
		return opnd{}, errAt(a.Pos, "register %s of type .%s does not fit a .%s result", a.Name, r.t, t)
	}
	return o, nil
}

func (d *decoder) dst(a ptx.Operand) (opnd, error) {
	if a.Kind == ptx.OpName && a.Name == "_" {
		return opnd{kind: oSink}, nil
	}
	if a.Kind != ptx.OpName || a.Neg {
		return opnd{}, errAt(a.Pos, "destination %s is not a register", a)
	}
	r, ok := d.ld.regs.get(a.Name)
	if !ok {
		if _, sp := specialIndex[a.Name]; sp {
			return opnd{}, errAt(a.Pos, "cannot write special register %s", a.Name)
		}
		return opnd{}, errAt(a.Pos, "undefined register %s", a.Name)
	}
	return opnd{kind: oReg, reg: r.idx, imm: r.t.mask()}, nil
}

func (ld *loader) lookup(name string) (sym, bool) {
	s, ok := ld.fsyms[name]
	if !ok {
		s, ok = ld.syms[name]
	}
	if ok && s.sp == spShared && s.addr < 0 {
		base := ld.fn.shared
		if !ld.fn.entry {
			base = ld.m.shared
		}
		s.addr = alignUp(int64(base), 16)
		ld.fn.dynShared = true
	}
	return s, ok
}

// addr decodes [base+off] for an access in state space sp and returns the
// space the access really uses.
func (d *decoder) addr(a ptx.Operand, sp space) (space, error) {
	if a.Kind != ptx.OpAddr {
		return 0, errAt(a.Pos, "expected an address, found %s", a)
	}
	in := d.in
	in.off = a.Int
	if a.Name == "" {
		in.a = opnd{kind: oImm}
	} else if r, ok := d.ld.regs.get(a.Name); ok {
		if r.t.size() < 4 || r.t.isFloat() {
			return 0, errAt(a.Pos, "address register %s has type .%s", a.Name, r.t)
		}
		in.a = opnd{kind: oReg, reg: r.idx}
	} else if s, ok := d.ld.lookup(a.Name); ok {
		in.a = opnd{kind: oImm, imm: uint64(s.addr)}
		switch {
		case sp == spGeneric && s.sp == spGlobal:
		case sp == spGeneric || sp == spKParam && s.sp == spLocal:
			sp = s.sp
		case sp == spConst && s.sp == spGlobal:
		case sp != s.sp:
			return 0, errAt(a.Pos, "%s is a .%s variable, not .%s", a.Name, s.sp, sp)
		}
	} else {
		return 0, errAt(a.Pos, "undefined name %s in address", a.Name)
	}
	if sp == spKParam && !d.ld.fn.entry {
		sp = spLocal
	}
	return sp, nil
}

// space decodes the state space qualifier. A launch has no clusters (each
// block is a cluster of one), so .shared::cluster addresses the block's own
// shared memory, as .shared::cta does.
func (d *decoder) space() space {
	switch d.o.oneOf("global", "shared", "shared::cta", "shared::cluster", "local", "param", "const") {
	case "global":
		return spGlobal
	case "shared", "shared::cta", "shared::cluster":
		return spShared
	case "local":
		return spLocal
	case "param":
		return spKParam
	case "const":
		return spConst
	}
	return spGeneric
}

func (d *decoder) vecWidth() int {
	switch d.o.oneOf("v2", "v4") {
	case "v2":
		return 2
	case "v4":
		return 4
	}
	return 1
}

// regs decodes a register or {a, b, ...} operand list of n registers.
func (d *decoder) regList(a ptx.Operand, n int, isDst bool, t ptype) ([]opnd, error) {
	elems := []ptx.Operand{a}
	if a.Kind == ptx.OpVec {
		elems = a.Elems
	}
	if len(elems) != n {
		return nil, errAt(a.Pos, "expected %d registers, found %s", n, a)
	}
	out := make([]opnd, n)
	for i, e := range elems {
		var err error
		if isDst {
			out[i], err = d.dstT(e, t)
		} else {
			out[i], err = d.src(e, t)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mode returns the index in names of the opcode's mode qualifier.
func (d *decoder) mode(names ...string) (uint8, error) {
	m := d.o.oneOf(names...)
	for i, n := range names {
		if n == m {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("missing mode (one of .%s)", strings.Join(names, ", ."))
}

// dstPair decodes a destination that may be a p|q pair; a missing second
// destination is a sink.
func (d *decoder) dstPair(a ptx.Operand) error {
	in := d.in
	in.d[1] = opnd{kind: oSink}
	var err error
	if a.Kind != ptx.OpPair {
		in.d[0], err = d.dst(a)
		return err
	}
	if in.d[0], err = d.dst(a.Elems[0]); err != nil {
		return err
	}
	in.d[1], err = d.dst(a.Elems[1])
	return err
}

func (d *decoder) srcs(t ptype, args []ptx.Operand) error {
	for i, a := range args {
		s, err := d.src(a, t)
		if err != nil {
			return err
		}
		d.in.s[i] = s
	}
	d.in.n = uint8(len(args))
	return nil
}

func (d *decoder) run(name string) error {
	in, o, args := d.in, d.o, d.pi.Args
	in.class = ClassInteger
	switch name {
	case "mov":
		return d.mov()
	case "ld", "ldu", "st":
		return d.ldst(name)
	case "cvta":
		to := o.has("to")
		sp := d.space()
		t, err := d.oneType()
		if err != nil || (t != tU64 && t != tU32 && t != tB64 && t != tB32) || d.nargs(2) != nil {
			return fmt.Errorf("bad form")
		}
		if sp != spShared && sp != spLocal && sp != spGlobal && sp != spConst {
			return fmt.Errorf("unsupported state space")
		}
		in.op, in.space, in.t = opCvta, sp, t
		if to {
			in.op = opCvtaTo
		}
		if in.d[0], err = d.dst(args[0]); err != nil {
			return err
		}
		if in.s[0], err = d.src(args[1], tU64); err != nil {
			return err
		}
		// Both addresses have the instruction's width, as ptxas demands
		// (cvta.to.shared.u32 of a 64-bit register is an error).
		for _, a := range args {
			if r, ok := d.ld.regs.get(a.Name); ok && a.Kind == ptx.OpName && r.t.size() != t.size() {
				return errAt(a.Pos, "register %s of type .%s does not fit a .%s address", a.Name, r.t, t)
			}
		}
		return nil
	case "cvt":
		return d.cvt()
	case "addc", "subc", "madc":
		return d.carry(name, true)
	case "add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "abs", "neg",
		"rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "copysign", "testp":
		return d.arith(name)
	case "and", "or", "xor", "not", "cnot", "shl", "shr", "popc", "clz", "brev", "bfe", "bfi", "prmt", "bfind":
		return d.bits(name)
	case "dp4a", "dp2a":
		return d.dot(name)
	case "shf":
		return d.shf()
	case "lop3":
		return d.lop3()
	case "isspacep":
		return d.isspacep()
	case "setp":
		return d.setp()
	case "set", "selp", "slct":
		return d.select_(name)
	case "bra", "brx":
		if name == "brx" || d.nargs(1) != nil || args[0].Kind != ptx.OpName {
			return fmt.Errorf("bad form")
		}
		pc, ok := d.ld.labels[args[0].Name]
		if !ok {
			return errAt(args[0].Pos, "undefined label %s", args[0].Name)
		}
		in.op, in.class, in.target = opBra, ClassControl, pc
		return nil
	case "call":
		return d.call()
	case "ret":
		in.op, in.class = opRet, ClassControl
		if d.ld.fn.entry {
			in.op = opExit
		}
		return d.nargs(0)
	case "exit":
		in.op, in.class = opExit, ClassControl
		return d.nargs(0)
	case "trap", "brkpt":
		in.op, in.class = opTrap, ClassControl
		return nil
	case "griddepcontrol":
		return d.griddep()
	case "membar", "fence", "nanosleep", "prefetch", "prefetchu", "pmevent":
		// Memory is sequentially consistent in the simulator; these only order,
		// and a fence between blocks (gpu or sys scope) matters to the global racecheck.
		if (name == "membar" || name == "fence") && !o.has("proxy") && !o.has("cta") && !o.has("cluster") && !o.has("mbarrier_init") {
			in.sem = semFence
		}
		o.has("proxy")
		o.has("alias")
		o.has("gl")
		o.has("async")
		o.has("L1")
		o.has("L2")
		o.has("global")
		o.has("local")
		o.has("u32")
		in.op, in.class = opNop, ClassOther
		return nil
	case "bar", "barrier":
		return d.bar()
	case "shfl":
		return d.shfl()
	case "vote":
		return d.vote()
	case "activemask":
		in.op, in.class = opActivemask, ClassWarp
		o.types()
		if err := d.nargs(1); err != nil {
			return err
		}
		var err error
		in.d[0], err = d.dst(args[0])
		return err
	case "match":
		return d.match()
	case "redux":
		return d.redux()
	case "mul24", "mad24":
		return d.mul24(name)
	case "atom", "red":
		return d.atom(name)
	case "ldmatrix":
		return d.ldmatrix()
	case "mma":
		return d.mma()
	case "cp":
		return d.cpAsync()
	}
	return fmt.Errorf("unsupported instruction")
}

func (d *decoder) mov() error {
	in, args := d.in, d.pi.Args
	t, err := d.oneType()
	if err != nil || d.nargs(2) != nil {
		return fmt.Errorf("bad form")
	}
	in.op, in.t = opMov, t
	switch {
	case args[0].Kind == ptx.OpVec: // unpack: mov.b64 {lo, hi}, x
		n := len(args[0].Elems)
		if n < 2 || t.bits()%uint(n) != 0 {
			return fmt.Errorf("bad vector")
		}
		ds, err := d.regList(args[0], n, true, 0)
		if err != nil {
			return err
		}
		copy(in.d[:], ds)
		in.op, in.n = opUnpack, uint8(n)
		in.s[0], err = d.src(args[1], t)
		return err
	case args[1].Kind == ptx.OpVec:
		n := len(args[1].Elems)
		if n < 2 || t.bits()%uint(n) != 0 {
			return fmt.Errorf("bad vector")
		}
		ss, err := d.regList(args[1], n, false, tB32)
		if err != nil {
			return err
		}
		copy(in.s[:], ss)
		in.op, in.n = opPack, uint8(n)
		in.d[0], err = d.dst(args[0])
		return err
	}
	if in.d[0], err = d.dstT(args[0], t); err != nil {
		return err
	}
	in.s[0], err = d.src(args[1], t)
	return err
}

func (d *decoder) ldst(name string) error {
	in, o, args := d.in, d.o, d.pi.Args
	sp := d.space()
	n := d.vecWidth()
	t, err := d.oneType()
	if err != nil || d.nargs(2) != nil {
		return fmt.Errorf("bad form")
	}
	if t == tPred || t == tB128 {
		return fmt.Errorf("type .%s not supported", t)
	}
	o.has("unified")
	in.t, in.n = t, uint8(n)
	for _, q := range []string{"volatile", "relaxed", "acquire", "release"} {
		if o.has(q) {
			in.flag = ldOrdered
		}
	}
	in.sem = o.memSem(false)
	ai, vi := 1, 0
	in.op = opLd
	if name == "st" {
		in.op, ai, vi = opSt, 0, 1
		if sp == spConst {
			return fmt.Errorf("cannot store to .const")
		}
	}
	if in.space, err = d.addr(args[ai], sp); err != nil {
		return err
	}
	if in.op == opLd {
		ds, err := d.regList(args[vi], n, true, t)
		if err != nil {
			return err
		}
		copy(in.d[:], ds)
	} else {
		ss, err := d.regList(args[vi], n, false, t)
		if err != nil {
			return err
		}
		copy(in.s[:], ss)
	}
	in.class = memClass(in.op == opSt, in.space)
	return nil
}

// ldOrdered in inst.flag marks a load or store with a memory-order
// qualifier: it synchronizes with atomics on the same address.
const ldOrdered = 1

func memClass(store bool, sp space) Class {
	switch sp {
	case spShared:
		if store {
			return ClassStoreShared
		}
		return ClassLoadShared
	case spLocal:
		if store {
			return ClassStoreLocal
		}
		return ClassLoadLocal
	case spKParam:
		return ClassLoadParam
	case spConst:
		return ClassLoadConst
	}
	if store {
		return ClassStoreGlobal
	}
	return ClassLoadGlobal
}

func (d *decoder) cvt() error {
	in, o, args := d.in, d.o, d.pi.Args
	if fp := o.oneOf("e4m3x2", "e5m2x2"); fp != "" {
		return d.cvtFP8(fp)
	}
	in.rnd = o.rounding()
	for _, p := range []string{"rni", "rzi", "rmi", "rpi"} {
		for _, q := range o.parts {
			if q == p {
				in.flag = 1
			}
		}
	}
	in.ftz, in.sat = o.has("ftz"), o.has("sat")
	ts := o.types()
	if len(ts) != 2 {
		return fmt.Errorf("bad form")
	}
	in.t, in.t2 = ts[0], ts[1]
	if (in.t == tF16x2 || in.t == tBF16x2) && in.t2 == tF32 && len(args) == 3 {
		// cvt.rn.f16x2.f32 d, a, b packs a into the upper half, b into the lower.
		h := in.t - 1
		one := cvtFn(h, tF32)
		in.op, in.class = opALU, ClassConvert
		in.fn = func(in *inst, a, b, _, _ uint64) uint64 {
			return one(in, a, 0, 0, 0)<<16 | one(in, b, 0, 0, 0)
		}
		if o.has("relu") {
			in.fn = relu(in.fn, in.t)
		}
		var err error
		if in.d[0], err = d.dstT(args[0], in.t); err != nil {
			return err
		}
		return d.srcs(tF32, args[1:])
	}
	if d.nargs(2) != nil {
		return fmt.Errorf("bad form")
	}
	if in.t == tF16x2 || in.t == tBF16x2 || in.t2 == tF16x2 || in.t2 == tBF16x2 || in.t == tPred || in.t2 == tPred {
		return fmt.Errorf("unsupported conversion")
	}
	in.op, in.fn, in.class = opALU, cvtFn(in.t, in.t2), ClassConvert
	if o.has("relu") {
		if (in.t != tF16 && in.t != tBF16) || in.t2 != tF32 {
			return fmt.Errorf(".relu needs an f16 or bf16 result from f32")
		}
		in.fn = relu(in.fn, in.t)
	}
	var err error
	if in.d[0], err = d.dstT(args[0], in.t); err != nil {
		return err
	}
	return d.srcs(in.t2, args[1:])
}

func (d *decoder) arith(name string) error {
	in, o, args := d.in, d.o, d.pi.Args
	in.rnd = o.rounding()
	in.ftz, in.sat = o.has("ftz"), o.has("sat")
	hi, wide := o.has("hi"), o.has("wide")
	o.has("lo")
	approx := o.oneOf("approx", "full") != ""
	propNaN := o.has("NaN")
	o.has("xorsign")
	if o.has("cc") {
		return d.carry(name, false)
	}
	t, err := d.oneType()
	if err != nil {
		return err
	}
	in.t, in.op = t, opALU
	in.class = floatClass(t)
	nsrc := map[string]int{"mad": 3, "fma": 3}[name]
	if nsrc == 0 {
		nsrc = 2
		switch name {
		case "abs", "neg", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "testp":
			nsrc = 1
		}
	}
	if err := d.nargs(nsrc + 1); err != nil {
		return err
	}
	if t.isFloat() {
		if hi || wide {
			return fmt.Errorf(".hi/.wide need an integer type")
		}
		switch name {
		case "add", "sub", "mul", "div", "fma", "mad":
			if name == "div" && t == tF32 && in.rnd == rnDefault && !approx {
				return fmt.Errorf("div.f32 needs .approx, .full or a rounding mode")
			}
			op := map[string]byte{"add": '+', "sub": '-', "mul": '*', "div": '/', "fma": 'f', "mad": 'f'}[name]
			in.fn = fArith(t, in.rnd, op)
		case "min", "max":
			in.fn = fMinMax(t, name == "max", propNaN)
		case "copysign":
			sign := uint64(1) << (t.bits() - 1)
			in.fn = func(_ *inst, a, b, _, _ uint64) uint64 { return a&sign | b&^sign }
		case "testp":
			return d.testp(t)
		default:
			in.fn = fUnary(name, t, in.rnd)
			if name == "rem" || in.fn == nil {
				return fmt.Errorf("no floating-point form")
			}
			if t == tF64 && approx && (name == "rcp" || name == "rsqrt") {
				if name == "rcp" && !in.ftz {
					return fmt.Errorf("rcp.approx.f64 needs .ftz")
				}
				if in.ftz {
					in.fn = approxUpper(fUnary(name, tF64, rn))
				}
			}
		}
		if o.has("relu") {
			if name != "fma" || (t != tF16 && t != tF16x2 && t != tBF16 && t != tBF16x2) {
				return fmt.Errorf(".relu needs fma on f16 or bf16 values")
			}
			in.fn = relu(in.fn, t)
		}
	} else {
		if t == tPred {
			return fmt.Errorf("no .pred form")
		}
		if name == "mul" || name == "mad" {
			if wide && t.size() > 4 {
				return fmt.Errorf(".wide needs a 16- or 32-bit type")
			}
		}
		in.fn, err = intArith(name, t, hi, wide, in.sat)
		if err != nil {
			return err
		}
	}
	if in.d[0], err = d.dstT(args[0], t); err != nil {
		return err
	}
	st := t
	if (name == "mul" || name == "mad") && wide {
		// mad.wide's addend has the doubled width.
		if err := d.srcs(t, args[1:3]); err != nil {
			return err
		}
		if name == "mad" {
			wt := map[ptype]ptype{tU16: tU32, tS16: tS32, tU32: tU64, tS32: tS64}[t]
			if in.s[2], err = d.src(args[3], wt); err != nil {
				return err
			}
			in.n = 3
		}
		return nil
	}
	return d.srcs(st, args[1:])
}

// floatClass is the counter class of an instruction of type t.
func floatClass(t ptype) Class {
	switch {
	case t == tF64:
		return ClassFP64
	case t == tF32:
		return ClassFP32
	case t.isFloat():
		return ClassFP16
	}
	return ClassInteger
}

func (d *decoder) testp(t ptype) error {
	in, o, args := d.in, d.o, d.pi.Args
	mode := o.oneOf("finite", "infinite", "number", "notanumber", "normal", "subnormal")
	if mode == "" || (t != tF32 && t != tF64) {
		return fmt.Errorf("bad form")
	}
	in.fn = func(_ *inst, a, _, _, _ uint64) uint64 {
		var x float64
		if t == tF32 {
			x = f32(a)
		} else {
			x = f64(a)
		}
		r := false
		ax := math.Abs(x)
		minNormal := 0x1p-126
		if t == tF64 {
			minNormal = 0x1p-1022
		}
		switch mode {
		case "finite":
			r = !math.IsInf(x, 0) && x == x
		case "infinite":
			r = math.IsInf(x, 0)
		case "number":
			r = x == x
		case "notanumber":
			r = x != x
		case "normal":
			r = ax >= minNormal && !math.IsInf(x, 0)
		case "subnormal":
			r = ax > 0 && ax < minNormal
		}
		if r {
			return 1
		}
		return 0
	}
	var err error
	if in.d[0], err = d.dstT(args[0], tPred); err != nil {
		return err
	}
	return d.srcs(t, args[1:])
}

// Carry instruction flags.
const (
	carrySub uint8 = 1 << iota
	carryIn
	carryOut
	carryMad // mad.cc/madc: the addends are a*b (low or high half) and c
	carryHi
)

// carry decodes add/sub .cc and addc/subc: the carry flag is one bit per
// thread in a hidden register.
func (d *decoder) carry(name string, cin bool) error {
	in, args := d.in, d.pi.Args
	cout := !cin || d.o.has("cc")
	t, err := d.oneType()
	nsrc := 2
	if name == "mad" || name == "madc" {
		nsrc = 3
	}
	if err != nil || (t.size() != 4 && t.size() != 8) || t.isFloat() || d.nargs(nsrc+1) != nil {
		return fmt.Errorf("bad form")
	}
	in.op, in.t = opCarry, t
	switch name {
	case "add", "addc":
	case "sub", "subc":
		in.flag = carrySub
	case "mad", "madc":
		in.flag = carryMad
		if d.o.oneOf("hi", "lo") == "hi" {
			in.flag |= carryHi
		}
	default:
		return fmt.Errorf("unsupported carry form")
	}
	if cin {
		in.flag |= carryIn
	}
	if cout {
		in.flag |= carryOut
	}
	if in.d[0], err = d.dstT(args[0], t); err != nil {
		return err
	}
	return d.srcs(t, args[1:])
}

func (d *decoder) bits(name string) error {
	in, args := d.in, d.pi.Args
	t, err := d.oneType()
	if err != nil {
		return err
	}
	in.op, in.t = opALU, t
	if name == "prmt" {
		in.fn = prmt
		if m := d.o.oneOf("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"); m != "" {
			in.fn = prmtMode(prmtModes[m])
		}
	} else {
		in.fn = bitOp(name, t)
	}
	if t.isFloat() && t != tF32 && name != "and" {
		return fmt.Errorf("no floating-point form")
	}
	if name == "bfind" {
		in.fn = bfind(t, d.o.has("shiftamt"))
	}
	n := map[string]int{"not": 1, "cnot": 1, "popc": 1, "clz": 1, "brev": 1, "bfind": 1, "bfe": 3, "bfi": 4, "prmt": 3}[name]
	if n == 0 {
		n = 2
	}
	if err := d.nargs(n + 1); err != nil {
		return err
	}
	if in.d[0], err = d.dstT(args[0], t); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		st := t
		if (name == "shl" || name == "shr") && i == 2 || name == "bfe" && i > 1 || name == "bfi" && i > 2 {
			st = tU32
		}
		if in.s[i-1], err = d.src(args[i], st); err != nil {
			return err
		}
	}
	in.n = uint8(n)
	return nil
}

// shf is the funnel shift: {b, a} as one 64-bit value shifted by c, the
// shift amount wrapped mod 32 or clamped to 32.
func (d *decoder) shf() error {
	in, o, args := d.in, d.o, d.pi.Args
	left := o.oneOf("l", "r") == "l"
	wrap := o.oneOf("wrap", "clamp") == "wrap"
	if t, err := d.oneType(); err != nil || t != tB32 || d.nargs(4) != nil {
		return fmt.Errorf("bad form")
	}
	in.op, in.t = opALU, tB32
	in.fn = func(_ *inst, a, b, c, _ uint64) uint64 {
		n := c & 0xFFFFFFFF
		if wrap {
			n &= 31
		} else {
			n = min(n, 32)
		}
		x := (b&0xFFFFFFFF)<<32 | a&0xFFFFFFFF
		if left {
			return (x << n) >> 32 & 0xFFFFFFFF
		}
		return (x >> n) & 0xFFFFFFFF
	}
	var err error
	if in.d[0], err = d.dstT(args[0], tB32); err != nil {
		return err
	}
	return d.srcs(tB32, args[1:])
}

// lop3 computes any three-input logic function from its 8-bit truth table:
// bit (a<<2 | b<<1 | c) of immLut is the result for those input bits.
func (d *decoder) lop3() error {
	in, args := d.in, d.pi.Args
	if t, err := d.oneType(); err != nil || t != tB32 || d.nargs(5) != nil || args[4].Kind != ptx.OpInt {
		return fmt.Errorf("bad form")
	}
	in.op, in.t = opALU, tB32
	lut := uint64(args[4].Int) & 0xFF
	in.fn = func(_ *inst, a, b, c, _ uint64) uint64 {
		var r uint64
		for i := uint(0); i < 8; i++ {
			if lut>>i&1 == 0 {
				continue
			}
			m := ^uint64(0)
			for bit, v := range [3]uint64{c, b, a} {
				if i>>bit&1 == 0 {
					v = ^v
				}
				m &= v
			}
			r |= m
		}
		return r & 0xFFFFFFFF
	}
	var err error
	if in.d[0], err = d.dstT(args[0], tB32); err != nil {
		return err
	}
	return d.srcs(tB32, args[1:4])
}

func (d *decoder) isspacep() error {
	in, args := d.in, d.pi.Args
	sp := d.space()
	if d.nargs(2) != nil || sp == spGeneric {
		return fmt.Errorf("bad form")
	}
	in.op, in.t = opALU, tU64
	in.fn = func(_ *inst, a, _, _, _ uint64) uint64 {
		got := resolved(spGeneric, a)
		return b2u(got == sp || sp == spConst && got == spGlobal)
	}
	var err error
	if in.d[0], err = d.dstT(args[0], tPred); err != nil {
		return err
	}
	return d.srcs(tU64, args[1:])
}

var bopByName = map[string]uint8{"and": 1, "or": 2, "xor": 3}

func (d *decoder) setp() error {
	in, o, args := d.in, d.o, d.pi.Args
	in.ftz = o.has("ftz")
	var cmp string
	for i, p := range o.parts {
		if _, ok := cmpByName[p]; ok && cmp == "" {
			cmp, o.used[i] = p, true
		}
	}
	for i, p := range o.parts {
		if b, ok := bopByName[p]; ok && !o.used[i] {
			in.bop, o.used[i] = b, true
		}
	}
	t, err := d.oneType()
	if err != nil || cmp == "" {
		return fmt.Errorf("bad form")
	}
	if t == tF16x2 || t == tBF16x2 {
		return fmt.Errorf("packed setp is not supported")
	}
	in.op, in.t, in.flag = opSetp, t, cmpByName[cmp]
	in.class = floatClass(t)
	if (in.bop != 0) != (len(args) == 4) || d.nargs(3, 4) != nil {
		return fmt.Errorf("bad form")
	}
	if err := d.dstPair(args[0]); err != nil {
		return err
	}
	if err := d.srcs(t, args[1:3]); err != nil {
		return err
	}
	if len(args) == 4 {
		c := args[3]
		neg := c.Neg
		c.Neg = false
		if in.s[2], err = d.src(c, tPred); err != nil {
			return err
		}
		if neg {
			in.negc = true
		}
	}
	return nil
}

func (d *decoder) select_(name string) error {
	in, o, args := d.in, d.o, d.pi.Args
	in.ftz = o.has("ftz")
	in.op = opALU
	var err error
	switch name {
	case "selp":
		t, err := d.oneType()
		if err != nil || d.nargs(4) != nil {
			return fmt.Errorf("bad form")
		}
		in.t = t
		in.fn = func(_ *inst, a, b, c, _ uint64) uint64 {
			if c&1 != 0 {
				return a
			}
			return b
		}
		if in.d[0], err = d.dstT(args[0], t); err != nil {
			return err
		}
		if err = d.srcs(t, args[1:3]); err != nil {
			return err
		}
		in.s[2], err = d.src(args[3], tPred)
		in.n = 3
		return err
	case "slct":
		ts := o.types()
		if len(ts) != 2 || d.nargs(4) != nil {
			return fmt.Errorf("bad form")
		}
		in.t, in.t2 = ts[0], ts[1]
		ct := ts[1]
		in.fn = func(in *inst, a, b, c, _ uint64) uint64 {
			var ge bool
			if ct == tF32 {
				x := fin(in, ct, c)
				ge = x >= 0 || math.Signbit(x) == false && x == 0
			} else {
				ge = ct.sext(c) >= 0
			}
			if ge {
				return a
			}
			return b
		}
		if in.d[0], err = d.dstT(args[0], in.t); err != nil {
			return err
		}
		if err = d.srcs(ts[0], args[1:3]); err != nil {
			return err
		}
		in.s[2], err = d.src(args[3], ct)
		in.n = 3
		return err
	}
	// set.cmp.dtype.stype d, a, b
	var cmp string
	for i, p := range o.parts {
		if _, ok := cmpByName[p]; ok {
			cmp, o.used[i] = p, true
			break
		}
	}
	ts := o.types()
	if len(ts) != 2 || cmp == "" || d.nargs(3) != nil {
		return fmt.Errorf("bad form (boolean set is not supported)")
	}
	in.t, in.t2 = ts[0], ts[1]
	c, dt, st := cmpByName[cmp], ts[0], ts[1]
	in.fn = func(in *inst, a, b, _, _ uint64) uint64 {
		if !compare(in, st, c, a, b) {
			return 0
		}
		if dt == tF32 {
			return 0x3F800000
		}
		return dt.mask()
	}
	if in.d[0], err = d.dstT(args[0], in.t); err != nil {
		return err
	}
	return d.srcs(st, args[1:])
}

func (d *decoder) call() error {
	in, args := d.in, d.pi.Args
	in.op, in.class = opCall, ClassControl
	// call{.uni} (rets), fname, (args); the return list and argument list are optional.
	i := 0
	var rets, params []ptx.Operand
	if i < len(args) && args[i].Kind == ptx.OpList {
		rets = args[i].Elems
		i++
	}
	if i >= len(args) || args[i].Kind != ptx.OpName {
		return fmt.Errorf("bad form")
	}
	fname := args[i]
	i++
	if i < len(args) && args[i].Kind == ptx.OpList {
		params = args[i].Elems
		i++
	}
	if i != len(args) {
		return fmt.Errorf("indirect calls (prototypes) are not supported")
	}
	callee, ok := d.ld.m.funcs[fname.Name]
	if !ok {
		if _, isReg := d.ld.regs.get(fname.Name); isReg {
			return fmt.Errorf("indirect calls are not supported")
		}
		return errAt(fname.Pos, "undefined function %s", fname.Name)
	}
	if callee.entry {
		return errAt(fname.Pos, "cannot call kernel %s", fname.Name)
	}
	in.callee = callee
	var sizes []int
	for _, list := range [][]ptx.Operand{params, rets} {
		for _, a := range list {
			s, ok := d.ld.lookup(a.Name)
			if a.Kind != ptx.OpName || !ok || s.sp != spLocal {
				return errAt(a.Pos, "call operand %s must be a .param variable", a)
			}
			in.args = append(in.args, s.addr)
			sizes = append(sizes, s.size)
		}
	}
	in.n, in.nret = uint8(len(params)), len(rets)
	pos := d.pi.Pos
	fn := d.ld.fn
	d.ld.pending = append(d.ld.pending, func() error {
		if callee.start < 0 {
			return errAt(pos, "function %s has no body", callee.name)
		}
		if len(params) != len(callee.params) || len(rets) != len(callee.rets) {
			return errAt(pos, "call to %s: wrong number of arguments or results", callee.name)
		}
		if callee == fn {
			return errAt(pos, "recursive call to %s is not supported", callee.name)
		}
		for i, p := range append(append([]param{}, callee.params...), callee.rets...) {
			if sizes[i] != p.Size {
				return errAt(pos, "call to %s: operand %d has %d bytes, parameter %s has %d", callee.name, i, sizes[i], p.Name, p.Size)
			}
		}
		return nil
	})
	return nil
}

// Barrier kinds in inst.flag.
const (
	barSync uint8 = iota
	barArrive
	barRedPopc
	barRedAnd
	barRedOr
)

func (d *decoder) bar() error {
	in, o, args := d.in, d.o, d.pi.Args
	in.op, in.class = opBar, ClassBarrier
	if o.has("warp") {
		// bar.warp.sync membermask: a rendezvous of the mask's lanes only
		// (__syncwarp); "warp" must be tested before "sync".
		if !o.has("sync") || d.nargs(1) != nil {
			return fmt.Errorf("bad form")
		}
		in.op = opBarWarp
		var err error
		in.s[0], err = d.src(args[0], tB32)
		return err
	}
	// bar.sync means barrier.sync.aligned: the whole warp must execute it.
	in.aligned = strings.HasPrefix(d.pi.Op, "bar.") || o.has("aligned")
	switch {
	case o.has("sync") || len(o.parts) == 0 || o.has("cta") && !o.has("arrive") && !o.has("red"):
		in.flag = barSync
	case o.has("arrive"):
		in.flag = barArrive
	case o.has("red"):
		switch o.oneOf("popc", "and", "or") {
		case "popc":
			in.flag = barRedPopc
		case "and":
			in.flag = barRedAnd
		case "or":
			in.flag = barRedOr
		default:
			return fmt.Errorf("bad form")
		}
		o.types()
		if len(args) < 3 {
			return fmt.Errorf("bad form")
		}
		var err error
		if in.d[0], err = d.dst(args[0]); err != nil {
			return err
		}
		c := args[len(args)-1]
		neg := c.Neg
		c.Neg = false
		if in.s[2], err = d.src(c, tPred); err != nil {
			return err
		}
		in.negc = neg
		args = args[1 : len(args)-1]
	default:
		return fmt.Errorf("bad form")
	}
	if len(args) < 1 || len(args) > 2 {
		return fmt.Errorf("bad form")
	}
	var err error
	if in.s[0], err = d.src(args[0], tU32); err != nil {
		return err
	}
	in.n = 1
	if len(args) == 2 {
		if in.s[1], err = d.src(args[1], tU32); err != nil {
			return err
		}
		in.n = 2
	}
	return nil
}

// shfl modes in inst.flag.
const (
	shflUp uint8 = iota
	shflDown
	shflBfly
	shflIdx
)

func (d *decoder) shfl() error {
	in, o, args := d.in, d.o, d.pi.Args
	in.op, in.class = opShfl, ClassWarp
	if !o.has("sync") {
		return fmt.Errorf("only shfl.sync is supported")
	}
	var err error
	if in.flag, err = d.mode("up", "down", "bfly", "idx"); err != nil {
		return err
	}
	t, err := d.oneType()
	if err != nil || t.size() != 4 || d.nargs(5) != nil {
		return fmt.Errorf("bad form")
	}
	in.t = t
	if err := d.dstPair(args[0]); err != nil {
		return err
	}
	return d.srcs(tB32, args[1:])
}

// vote modes in inst.flag.
const (
	voteAll uint8 = iota
	voteAny
	voteUni
	voteBallot
)

func (d *decoder) vote() error {
	in, o, args := d.in, d.o, d.pi.Args
	in.op, in.class = opVote, ClassWarp
	if !o.has("sync") {
		return fmt.Errorf("only vote.sync is supported")
	}
	var err error
	if in.flag, err = d.mode("all", "any", "uni", "ballot"); err != nil {
		return err
	}
	o.types()
	if err := d.nargs(3); err != nil {
		return err
	}
	if in.d[0], err = d.dst(args[0]); err != nil {
		return err
	}
	c := args[1]
	in.negc, c.Neg = c.Neg, false
	if in.s[0], err = d.src(c, tPred); err != nil {
		return err
	}
	in.s[1], err = d.src(args[2], tB32)
	return err
}

func (d *decoder) match() error {
	in, o, args := d.in, d.o, d.pi.Args
	in.op, in.class = opMatch, ClassWarp
	var err error
	if in.flag, err = d.mode("any", "all"); err != nil {
		return err
	}
	o.has("sync")
	t, err := d.oneType()
	if err != nil || (t != tB32 && t != tB64) || d.nargs(3) != nil {
		return fmt.Errorf("bad form")
	}
	in.t = t
	if args[0].Kind == ptx.OpPair && in.flag == 0 {
		return fmt.Errorf("match.any has no predicate result")
	}
	if err := d.dstPair(args[0]); err != nil {
		return err
	}
	if in.s[0], err = d.src(args[1], t); err != nil {
		return err
	}
	in.s[1], err = d.src(args[2], tB32)
	return err
}

// redux.sync.op.type d, a, membermask reduces a over the warp (sm_80).
func (d *decoder) redux() error {
	in, o, args := d.in, d.o, d.pi.Args
	in.op, in.class = opRedux, ClassWarp
	if !o.has("sync") {
		return fmt.Errorf("only redux.sync is supported")
	}
	var op string
	for i, p := range o.parts {
		if p == "add" || p == "min" || p == "max" || p == "and" || p == "or" || p == "xor" {
			op, o.used[i] = p, true
		}
	}
	t, err := d.oneType()
	if err != nil || op == "" || d.nargs(3) != nil || t.size() != 4 || t.isFloat() {
		return fmt.Errorf("bad form")
	}
	in.t, in.flag = t, atomByName[op]
	if in.d[0], err = d.dstT(args[0], t); err != nil {
		return err
	}
	return d.srcs(t, args[1:])
}

// mul24/mad24 multiply the low 24 bits of their operands; .lo keeps the low
// 32 bits of the 48-bit product, .hi its bits 47..16.
func (d *decoder) mul24(name string) error {
	in, o, args := d.in, d.o, d.pi.Args
	hi := o.oneOf("hi", "lo") == "hi"
	t, err := d.oneType()
	if err != nil || (t != tU32 && t != tS32) || d.nargs(map[string]int{"mul24": 3, "mad24": 4}[name]) != nil {
		return fmt.Errorf("bad form")
	}
	in.op, in.t = opALU, t
	in.fn = func(_ *inst, a, b, c, _ uint64) uint64 {
		var p uint64
		if t.signed() {
			p = uint64((int64(a<<40) >> 40) * (int64(b<<40) >> 40))
		} else {
			p = (a & 0xFFFFFF) * (b & 0xFFFFFF)
		}
		if hi {
			p >>= 16
		}
		return (p + c) & 0xFFFFFFFF
	}
	if in.d[0], err = d.dstT(args[0], t); err != nil {
		return err
	}
	return d.srcs(t, args[1:])
}

// Atomic operations in inst.flag.
const (
	atomAdd uint8 = iota
	atomMin
	atomMax
	atomInc
	atomDec
	atomExch
	atomCas
	atomAnd
	atomOr
	atomXor
)

var atomByName = map[string]uint8{"add": atomAdd, "min": atomMin, "max": atomMax, "inc": atomInc, "dec": atomDec,
	"exch": atomExch, "cas": atomCas, "and": atomAnd, "or": atomOr, "xor": atomXor}

func (d *decoder) atom(name string) error {
	in, o, args := d.in, d.o, d.pi.Args
	in.op, in.class = opAtom, ClassAtomic
	in.sem = o.memSem(true)
	sp := d.space()
	if sp != spGlobal && sp != spShared && sp != spGeneric {
		return fmt.Errorf("atomics need global or shared memory")
	}
	var op string
	for i, p := range o.parts {
		if _, ok := atomByName[p]; ok {
			op, o.used[i] = p, true
			break
		}
	}
	if op == "" {
		return fmt.Errorf("bad operation")
	}
	in.flag = atomByName[op]
	o.has("ftz")
	if d.vecWidth() != 1 {
		return fmt.Errorf("vector atomics are not supported")
	}
	t, err := d.oneType()
	if err != nil {
		return err
	}
	in.t = t
	if t.isFloat() && in.flag != atomAdd && in.flag != atomExch && in.flag != atomMin && in.flag != atomMax {
		return fmt.Errorf("no floating-point form")
	}
	nsrc := 1
	if in.flag == atomCas {
		nsrc = 2
	}
	ai := 1
	if name == "red" {
		ai = 0
		in.d[0] = opnd{kind: oSink}
		if in.flag == atomCas || in.flag == atomExch {
			return fmt.Errorf("red has no %s", op)
		}
	}
	if err := d.nargs(ai + 1 + nsrc); err != nil {
		return err
	}
	if ai == 1 {
		if in.d[0], err = d.dstT(args[0], t); err != nil {
			return err
		}
	}
	if in.space, err = d.addr(args[ai], sp); err != nil {
		return err
	}
	return d.srcs(t, args[ai+1:])
}

func (d *decoder) ldmatrix() error {
	in, o, args := d.in, d.o, d.pi.Args
	in.op, in.class = opLdmatrix, ClassLoadShared
	if !o.has("sync") || !o.has("m8n8") {
		return fmt.Errorf("only ldmatrix.sync.aligned.m8n8 is supported")
	}
	switch o.oneOf("x1", "x2", "x4") {
	case "x1":
		in.n = 1
	case "x2":
		in.n = 2
	case "x4":
		in.n = 4
	default:
		return fmt.Errorf("missing .x1/.x2/.x4")
	}
	in.flag = 0
	if o.has("trans") {
		in.flag = 1
	}
	sp := d.space()
	if sp != spShared && sp != spGeneric {
		return fmt.Errorf("ldmatrix reads shared memory")
	}
	if t, err := d.oneType(); err != nil || t != tB16 {
		return fmt.Errorf("only .b16 is supported")
	}
	if err := d.nargs(2); err != nil {
		return err
	}
	ds, err := d.regList(args[0], int(in.n), true, 0)
	if err != nil {
		return err
	}
	copy(in.d[:], ds)
	in.space, err = d.addr(args[1], sp)
	return err
}

// mma shapes in inst.flag.
const (
	mmaM16N8K16 uint8 = iota
	mmaM16N8K8
	mmaM16N8K32 // fp8 operands (fp8mma.go)
)

func (d *decoder) mma() error {
	in, o, args := d.in, d.o, d.pi.Args
	in.op, in.class = opMma, ClassTensor
	if !o.has("sync") || !o.has("row") || !o.has("col") {
		return fmt.Errorf("only mma.sync.aligned.*.row.col is supported")
	}
	switch o.oneOf("m16n8k16", "m16n8k8", "m16n8k32") {
	case "m16n8k32":
		return d.mmaFP8()
	case "m16n8k16":
		in.flag = mmaM16N8K16
	case "m16n8k8":
		in.flag = mmaM16N8K8
	default:
		return fmt.Errorf("unsupported shape")
	}
	ts := d.o.types()
	// .dtype.atype.btype.ctype
	if len(ts) != 4 || ts[1] != ts[2] {
		return fmt.Errorf("bad types")
	}
	dt, at, ct := ts[0], ts[1], ts[3]
	// ptxas 11.8 accepts no mixed accumulators in these shapes (f32 d with f16 c, or the reverse).
	okTypes := (dt == tF32 || dt == tF16) && ct == dt
	switch {
	case at == tF16:
	case at == tBF16 || at == tTF32:
		okTypes = okTypes && dt == tF32 && ct == tF32
	default:
		okTypes = false
	}
	if at == tTF32 && in.flag != mmaM16N8K8 {
		okTypes = false
	}
	if !okTypes {
		return fmt.Errorf("unsupported type combination")
	}
	in.t, in.t2 = dt, at
	in.t3 = ct
	if err := d.nargs(4); err != nil {
		return err
	}
	// Register counts per thread.
	na, nb := 4, 2
	switch {
	case in.flag == mmaM16N8K8 && (at == tF16 || at == tBF16):
		na, nb = 2, 1
	case in.flag == mmaM16N8K8 && at == tTF32:
		na, nb = 4, 2
	}
	nc := 4
	if ct == tF16 {
		nc = 2
	}
	nd := 4
	if dt == tF16 {
		nd = 2
	}
	var all []opnd
	for i, spec := range []struct {
		n   int
		dst bool
	}{{nd, true}, {na, false}, {nb, false}, {nc, false}} {
		ops, err := d.regList(args[i], spec.n, spec.dst, tB32)
		if err != nil {
			return err
		}
		all = append(all, ops...)
	}
	in.more = all
	in.n = uint8(na)<<4 | uint8(nb)
	return nil
}

func (d *decoder) cpAsync() error {
	in, o, args := d.in, d.o, d.pi.Args
	if !o.has("async") {
		return fmt.Errorf("unsupported instruction")
	}
	switch {
	case o.has("commit_group"):
		in.op, in.class = opCpCommit, ClassOther
		return d.nargs(0)
	case o.has("wait_group"):
		in.op, in.class = opCpWait, ClassOther
		if err := d.nargs(1); err != nil {
			return err
		}
		if args[0].Kind != ptx.OpInt {
			return fmt.Errorf("wait_group needs an integer")
		}
		in.off = args[0].Int
		return nil
	case o.has("wait_all"):
		in.op, in.class, in.off = opCpWait, ClassOther, -1
		return d.nargs(0)
	}
	in.op, in.class = opCpAsync, ClassLoadGlobal
	if o.oneOf("shared", "shared::cta") == "" || !o.has("global") {
		return fmt.Errorf("only cp.async.shared.global is supported")
	}
	o.oneOf("ca", "cg")
	if len(args) < 3 || len(args) > 4 {
		return fmt.Errorf("bad form")
	}
	if _, err := d.addr(args[0], spShared); err != nil {
		return err
	}
	dst, doff := d.in.a, d.in.off
	if _, err := d.addr(args[1], spGlobal); err != nil {
		return err
	}
	in.more = []opnd{dst, {kind: oImm, imm: uint64(doff)}}
	if args[2].Kind != ptx.OpInt || (args[2].Int != 4 && args[2].Int != 8 && args[2].Int != 16) {
		return fmt.Errorf("cp-size must be 4, 8 or 16")
	}
	in.n = uint8(args[2].Int)
	in.s[0] = opnd{kind: oImm, imm: uint64(args[2].Int)}
	if len(args) == 4 {
		var err error
		if in.s[0], err = d.src(args[3], tU32); err != nil {
			return err
		}
	}
	return nil
}
