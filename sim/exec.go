package sim

import (
	"fmt"
	"math"
	"math/bits"
)

// block is the state of one thread block; a worker reuses it for every
// block it runs.
type block struct {
	l      *launch
	m      *Module
	prog   []inst
	idx    int
	ctaid  Dim3
	nthr   int
	warps  []*warp
	shared []byte
	sinit  []byte
	race   raceShadow
	vc     []uint32 // racecheck: vc[u*nwarps+w] is the last clock of warp w known to warp u
	tick   uint32   // racecheck: the last clock handed out
	local  []byte
	linit  []byte // local bytes written, when checking
	bars   [16]barrier
	stats  Stats
	last   *allocation // most recently used global allocation
	clock  uint64
	steps  int64
	dep    *depSet // the global bytes its launch touched, for the dependent-launch check (griddep.go)
}

type barrier struct {
	arrived  int
	expected int
	line     int32
	red      uint64 // bar.red accumulator
	waiting  []barWait
	inst     *inst
	join     []uint32 // racecheck: the clocks of the warps that arrived
}

type barWait struct {
	w    *warp
	mask uint32
	pc   int32
	red  bool // write the bar.red result
}

type warp struct {
	b        *block
	id       int
	regs     []uint64 // regs[r<<5|lane]
	pc       [32]int32
	upc      int32
	conv     bool // all runnable lanes are at upc (pc[] is stale for them)
	live     uint32
	blocked  uint32 // waiting at a barrier
	parked   uint32 // waiting for the rest of their warp at a collective
	parkLive uint32 // live lanes when the last lane parked
	stack    [32][]int32
	cp       [32]cpState
	waited   uint32 // lanes past griddepcontrol.wait (griddep.go)
}

type cpState struct {
	cur    []cpCopy
	groups [][]cpCopy
}

type cpCopy struct {
	dst  uint64
	data []byte
	line int32
}

func newBlock(l *launch) *block {
	b := &block{l: l, m: l.m, prog: l.m.prog, dep: l.depRecorder()}
	b.nthr = l.cfg.Block.count()
	nw := (b.nthr + 31) / 32
	for i := 0; i < nw; i++ {
		b.warps = append(b.warps, &warp{b: b, id: i, regs: make([]uint64, l.m.nregs*32)})
	}
	b.shared = make([]byte, l.shared)
	if l.check {
		b.sinit = make([]byte, l.shared)
		b.race.init(l.shared, nw)
		b.vc = make([]uint32, nw*nw)
		for i := range b.bars {
			b.bars[i].join = make([]uint32, nw)
		}
	}
	b.local = make([]byte, int(l.m.frameSize)*b.nthr)
	if l.check {
		b.linit = make([]byte, len(b.local))
	}
	return b
}

func (b *block) run(idx int) error {
	l := b.l
	b.idx = idx
	b.ctaid = l.cfg.Grid.unflatten(idx)
	b.stats.Blocks++
	b.steps = 0
	if l.grace != nil {
		l.grace.start(idx)
	}
	for i := range b.shared {
		b.shared[i] = poisonByte
	}
	if l.check {
		clear(b.sinit)
		b.startClocks()
	}
	clear(b.local)
	clear(b.linit)
	for i := range b.bars {
		b.bars[i].reset()
	}
	for _, w := range b.warps {
		w.reset()
	}
	for {
		progress, done := false, true
		for _, w := range b.warps {
			if w.live == 0 {
				continue
			}
			done = false
			if w.live&^w.blocked == 0 {
				continue
			}
			n, err := w.run(4096)
			if err != nil {
				return err
			}
			progress = progress || n > 0
		}
		if done {
			return nil
		}
		if !progress {
			return b.deadlock()
		}
		if b.steps > l.cfg.MaxSteps {
			for _, w := range b.warps {
				if run := w.live &^ w.blocked &^ w.parked; run != 0 {
					lane := bits.TrailingZeros32(run)
					pc := w.upc
					if !w.conv {
						pc = w.pc[lane]
					}
					return w.fail(&b.prog[pc], lane, "error", "block did not finish within %d warp instructions (infinite loop?)", l.cfg.MaxSteps)
				}
			}
		}
	}
}

func (br *barrier) reset() {
	clear(br.join)
	*br = barrier{waiting: br.waiting[:0], join: br.join}
}

// startClocks begins a block's racecheck clocks above every stamp a previous
// block left in the shadow, so those count as ordered before everything.
// Each warp's own clock is one past what the others know of it.
func (b *block) startClocks() {
	if b.tick > 1<<31 {
		b.race.reset()
		b.tick = 0
	}
	nw := len(b.warps)
	g := b.tick
	for u := 0; u < nw; u++ {
		for w := 0; w < nw; w++ {
			b.vc[u*nw+w] = g
		}
		b.vc[u*nw+u] = g + 1
	}
	b.tick = g + 1
}

// arrive records warp w's arrival at br for racecheck: its accesses so far
// join the barrier's clocks, and it moves to a fresh clock, so accesses
// after a bar.arrive stay unordered with the barrier's waiters.
func (b *block) arrive(br *barrier, w *warp) {
	if b.vc == nil {
		return
	}
	nw := len(b.warps)
	vc := b.vc[w.id*nw : (w.id+1)*nw]
	for i, c := range vc {
		br.join[i] = max(br.join[i], c)
	}
	b.tick++
	vc[w.id] = b.tick
}

// acquire gives warp w the clocks of everything that arrived at br.
func (b *block) acquire(br *barrier, w *warp) {
	if b.vc == nil {
		return
	}
	nw := len(b.warps)
	vc := b.vc[w.id*nw : (w.id+1)*nw]
	for i, c := range br.join {
		vc[i] = max(vc[i], c)
	}
}

func (w *warp) reset() {
	b := w.b
	l := b.l
	clear(w.regs)
	w.live = 0
	w.waited = 0
	w.blocked = 0
	w.parked = 0
	w.conv = true
	w.upc = l.k.start
	cfg := l.cfg
	for lane := 0; lane < 32; lane++ {
		t := w.id*32 + lane
		w.stack[lane] = w.stack[lane][:0]
		w.cp[lane] = cpState{}
		if t >= b.nthr {
			continue
		}
		w.live |= 1 << lane
		w.pc[lane] = l.k.start
		tid := cfg.Block.unflatten(t)
		set := func(r int, v uint64) { w.regs[r<<5|lane] = v }
		for i, v := range []int{tid.X, tid.Y, tid.Z, cfg.Block.X, cfg.Block.Y, cfg.Block.Z,
			b.ctaid.X, b.ctaid.Y, b.ctaid.Z, cfg.Grid.X, cfg.Grid.Y, cfg.Grid.Z} {
			set(regTid+i, uint64(v))
		}
		set(regLaneid, uint64(lane))
		set(regWarpid, uint64(w.id))
		set(regNwarpid, uint64(len(b.warps)))
		set(regSmid, uint64(b.idx%132))
		set(regNsmid, 132)
		set(regLanemaskEq, 1<<lane)
		set(regLanemaskLt, 1<<lane-1)
		set(regLanemaskLe, 1<<(lane+1)-1)
		set(regLanemaskGt, uint64(^uint32(0)<<(lane+1)))
		set(regLanemaskGe, uint64(^uint32(0)<<lane))
		set(regWarpsize, 32)
		set(regDynSmem, uint64(l.dynBytes))
		set(regTotalSmem, uint64(l.shared))
	}
}

func (w *warp) thread(lane int) Dim3 { return w.b.l.cfg.Block.unflatten(w.id*32 + lane) }

// fail builds an Error for lane of warp w at instruction in.
func (w *warp) fail(in *inst, lane int, kind, format string, args ...any) error {
	return &Error{Kind: kind, Kernel: w.b.l.k.name, Line: int(in.line), Inst: in.text,
		Thread: w.thread(lane), Block: w.b.ctaid, Msg: fmt.Sprintf(format, args...)}
}

func (w *warp) val(o *opnd, l int) uint64 {
	switch o.kind {
	case oReg:
		return w.regs[int(o.reg)<<5|l]
	case oClock:
		return w.b.clock & 0xFFFFFFFF
	case oClock64:
		return w.b.clock
	case oClockHi:
		return w.b.clock >> 32
	}
	return o.imm
}

func (w *warp) set(o *opnd, l int, v uint64) {
	if o.kind == oReg {
		w.regs[int(o.reg)<<5|l] = v & o.imm
	}
}

// materialize stops the converged fast path: every runnable lane gets upc.
func (w *warp) materialize() {
	if !w.conv {
		return
	}
	for m := w.live &^ w.blocked &^ w.parked; m != 0; m &= m - 1 {
		w.pc[bits.TrailingZeros32(m)] = w.upc
	}
	w.conv = false
}

// goTo moves the lanes of mask to pc.
func (w *warp) goTo(mask uint32, pc int32) {
	if w.conv && mask == w.live&^w.blocked&^w.parked {
		w.upc = pc
		return
	}
	w.materialize()
	for m := mask; m != 0; m &= m - 1 {
		w.pc[bits.TrailingZeros32(m)] = pc
	}
}

// run executes up to budget instructions; it returns how many it executed.
func (w *warp) run(budget int) (int, error) {
	b := w.b
	prog := b.prog
	n := 0
	for ; n < budget; n++ {
		run := w.live &^ w.blocked &^ w.parked
		if run == 0 {
			// Parked lanes may be complete now that others have exited.
			if w.parked == 0 || w.live == w.parkLive {
				break
			}
			w.parkLive = w.live
			w.conv = false
			run, w.parked = w.parked, 0
		}
		var pc int32
		var mask uint32
		if w.conv {
			pc, mask = w.upc, run
		} else {
			// Lowest PC first: the lanes furthest behind run, so lanes that
			// took different paths meet again at the join point.
			pc = math.MaxInt32
			for m := run; m != 0; m &= m - 1 {
				if p := w.pc[bits.TrailingZeros32(m)]; p < pc {
					pc = p
				}
			}
			for m := run; m != 0; m &= m - 1 {
				if l := bits.TrailingZeros32(m); w.pc[l] == pc {
					mask |= 1 << l
				}
			}
			if mask == run {
				w.conv, w.upc = true, pc
			}
		}
		if w.parked != 0 {
			// Lanes waiting at this collective join the lanes arriving now.
			for m := w.parked; m != 0; m &= m - 1 {
				if l := bits.TrailingZeros32(m); w.pc[l] == pc {
					mask |= 1 << l
					w.parked &^= 1 << l
				}
			}
		}
		in := &prog[pc]
		exec := mask
		if in.guard >= 0 {
			g := uint32(0)
			base := int(in.guard) << 5
			for m := mask; m != 0; m &= m - 1 {
				l := bits.TrailingZeros32(m)
				g |= uint32(w.regs[base|l]&1) << l
			}
			if in.gneg {
				g = ^g
			}
			exec &= g
		}
		b.stats.WarpInsts++
		b.stats.ThreadInsts += int64(bits.OnesCount32(exec))
		b.stats.Classes[in.class]++
		b.clock++
		if err := w.step(in, pc, mask, exec); err != nil {
			return n + 1, err
		}
	}
	b.steps += int64(n)
	return n, nil
}

// step executes in for the lanes in exec; mask is every lane at this pc
// (guard-false lanes just move on).
func (w *warp) step(in *inst, pc int32, mask, exec uint32) error {
	regs := w.regs
	switch in.op {
	case opALU:
		if in.d[0].kind != oReg {
			break
		}
		fn := in.fn
		s0, s1, s2, s3 := &in.s[0], &in.s[1], &in.s[2], &in.s[3]
		dr, dm := int(in.d[0].reg)<<5, in.d[0].imm
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			regs[dr|l] = fn(in, w.val(s0, l), w.val(s1, l), w.val(s2, l), w.val(s3, l)) & dm
		}
	case opMov:
		if in.d[0].kind != oReg {
			break
		}
		dr, dm, s := int(in.d[0].reg)<<5, in.d[0].imm&in.t.mask(), &in.s[0]
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			regs[dr|l] = w.val(s, l) & dm
		}
	case opPack:
		sz := in.t.bits() / uint(in.n)
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			var v uint64
			for i := int(in.n) - 1; i >= 0; i-- {
				v = v<<sz | w.val(&in.s[i], l)&(1<<sz-1)
			}
			w.set(&in.d[0], l, v)
		}
	case opUnpack:
		sz := in.t.bits() / uint(in.n)
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			v := w.val(&in.s[0], l)
			for i := 0; i < int(in.n); i++ {
				w.set(&in.d[i], l, v>>(sz*uint(i))&(1<<sz-1))
			}
		}
	case opCvta, opCvtaTo:
		// Global addresses are generic addresses; shared and local ones
		// move in and out of their windows.
		var win uint64
		switch in.space {
		case spShared:
			win = sharedWin
		case spLocal:
			win = localWin
		}
		if in.op == opCvtaTo {
			win = -win
		}
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			w.set(&in.d[0], l, (w.val(&in.s[0], l)+win)&in.t.mask())
		}
	case opSetp:
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			r := compare(in, in.t, in.flag, w.val(&in.s[0], l), w.val(&in.s[1], l))
			q := !r
			if in.bop != 0 {
				c := w.val(&in.s[2], l)&1 != 0
				if in.negc {
					c = !c
				}
				r, q = boolOp(in.bop, r, c), boolOp(in.bop, !r, c)
			}
			w.set(&in.d[0], l, b2u(r))
			w.set(&in.d[1], l, b2u(q))
		}
	case opCarry:
		w.carry(in, exec)
	case opLd, opSt:
		if err := w.ldst(in, exec); err != nil {
			return err
		}
	case opBra:
		if exec == 0 {
			break
		}
		if exec == mask {
			w.goTo(mask, in.target)
			return nil
		}
		w.materialize()
		for m := mask; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			if exec&(1<<l) != 0 {
				w.pc[l] = in.target
			} else {
				w.pc[l] = pc + 1
			}
		}
		return nil
	case opCall:
		return w.call(in, pc, mask, exec)
	case opRet:
		return w.ret(in, pc, mask, exec)
	case opExit:
		w.live &^= exec
		for m := exec; m != 0; m &= m - 1 {
			w.cp[bits.TrailingZeros32(m)] = cpState{}
		}
		mask &^= exec
	case opTrap:
		if exec != 0 {
			return w.fail(in, bits.TrailingZeros32(exec), "error", "trap executed")
		}
	case opGridDep:
		w.execGridDep(in, exec)
	case opNop:
		if g := w.b.l.grace; g != nil && in.sem&semFence != 0 && exec != 0 {
			g.fence()
		}
	case opBar:
		return w.bar(in, pc, mask, exec)
	case opShfl, opVote, opMatch, opRedux, opLdmatrix, opMma, opBarWarp:
		if ready, err := w.rendezvous(in, pc, mask, exec); !ready || err != nil {
			return err
		}
		var err error
		switch in.op {
		case opBarWarp: // the rendezvous is all it does
		case opLdmatrix:
			err = w.ldmatrix(in, exec)
		case opMma:
			err = w.mma(in, exec)
		default:
			err = w.collective(in, exec)
		}
		if err != nil {
			return err
		}
	case opActivemask:
		if err := w.collective(in, exec); err != nil {
			return err
		}
	case opAtom:
		if err := w.atomic(in, exec); err != nil {
			return err
		}
	case opCpAsync, opCpCommit, opCpWait:
		if err := w.cpAsync(in, exec); err != nil {
			return err
		}
	default:
		return w.fail(in, bits.TrailingZeros32(mask), "error", "internal: opcode %d not executable", in.op)
	}
	w.goTo(mask, pc+1)
	return nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func boolOp(op uint8, a, b bool) bool {
	switch op {
	case 1:
		return a && b
	case 2:
		return a || b
	}
	return a != b
}

func (w *warp) carry(in *inst, exec uint32) {
	m64 := in.t.mask()
	for m := exec; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		a, b := w.val(&in.s[0], l)&m64, w.val(&in.s[1], l)&m64
		if in.flag&carryMad != 0 {
			// d = (a*b).lo/hi + c (+ carry in), with the carry of that addition.
			p := a * b & m64
			if in.flag&carryHi != 0 {
				p = mulHi(a, b, in.t.bits(), in.t.signed()) & m64
			}
			a, b = p, w.val(&in.s[2], l)&m64
		}
		var cin uint64
		if in.flag&carryIn != 0 {
			cin = w.regs[regCC<<5|l] & 1
		}
		var r, cout uint64
		if in.flag&carrySub != 0 {
			r = (a - b - cin) & m64
			if b+cin > a || (cin == 1 && b == m64) {
				cout = 1 // borrow
			}
		} else {
			r = (a + b + cin) & m64
			if in.t.size() == 8 {
				_, c1 := bits.Add64(a, b, cin)
				cout = c1
			} else {
				cout = (a + b + cin) >> 32 & 1
			}
		}
		w.set(&in.d[0], l, r)
		if in.flag&carryOut != 0 {
			w.regs[regCC<<5|l] = cout
		}
	}
}

func (w *warp) call(in *inst, pc int32, mask, exec uint32) error {
	if exec == 0 {
		w.goTo(mask, pc+1)
		return nil
	}
	callee := in.callee
	for m := exec; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		for _, ret := range w.stack[l] {
			if w.b.prog[ret].callee == callee {
				return w.fail(in, l, "error", "recursive call to %s is not supported", callee.name)
			}
		}
		if len(w.stack[l]) >= 64 {
			return w.fail(in, l, "error", "call stack overflow")
		}
		w.stack[l] = append(w.stack[l], pc)
		for i, p := range callee.params {
			w.frameCopy(l, callee.frame+p.off, in.args[i], p.Size)
		}
	}
	w.goTo(exec, callee.start)
	if rest := mask &^ exec; rest != 0 {
		w.materialize()
		for m := rest; m != 0; m &= m - 1 {
			w.pc[bits.TrailingZeros32(m)] = pc + 1
		}
	}
	return nil
}

// frameCopy copies n bytes within lane's local memory (parameter passing),
// with their written-or-not state.
func (w *warp) frameCopy(lane int, dst, src int64, n int) {
	base := int64(w.id*32+lane) * w.b.m.frameSize
	copy(w.b.local[base+dst:base+dst+int64(n)], w.b.local[base+src:base+src+int64(n)])
	if w.b.linit != nil {
		copy(w.b.linit[base+dst:base+dst+int64(n)], w.b.linit[base+src:base+src+int64(n)])
	}
}

func (w *warp) ret(in *inst, pc int32, mask, exec uint32) error {
	w.materialize()
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		if exec&(1<<l) == 0 {
			w.pc[l] = pc + 1
			continue
		}
		st := w.stack[l]
		if len(st) == 0 {
			return w.fail(in, l, "error", "ret with an empty call stack")
		}
		call := &w.b.prog[st[len(st)-1]]
		w.stack[l] = st[:len(st)-1]
		f := call.callee
		for j, r := range f.rets {
			w.frameCopy(l, call.args[int(call.n)+j], f.frame+r.off, r.Size)
		}
		w.pc[l] = st[len(st)-1] + 1
	}
	return nil
}

// bar handles bar.sync, bar.arrive and bar.red: arriving lanes block until
// the barrier's expected thread count has arrived.
func (w *warp) bar(in *inst, pc int32, mask, exec uint32) error {
	b := w.b
	w.materialize()
	for m := mask; m != 0; m &= m - 1 {
		w.pc[bits.TrailingZeros32(m)] = pc + 1
	}
	if exec == 0 {
		return nil
	}
	l0 := bits.TrailingZeros32(exec)
	id := w.val(&in.s[0], l0)
	if id >= 16 {
		return w.fail(in, l0, "error", "barrier %d out of range (0..15)", id)
	}
	expected := b.nthr
	if in.n == 2 {
		expected = int(w.val(&in.s[1], l0))
		if expected <= 0 || expected%32 != 0 || expected > len(b.warps)*32 {
			return w.fail(in, l0, "error", "barrier thread count %d must be a positive multiple of 32 up to the block size", expected)
		}
	}
	br := &b.bars[id]
	if br.arrived == 0 {
		br.expected, br.line, br.inst = expected, in.line, in
		switch in.flag {
		case barRedAnd:
			br.red = 1
		default:
			br.red = 0
		}
	} else if br.expected != expected && b.l.check {
		return w.fail(in, l0, "synccheck", "barrier %d used with thread count %d while threads wait with count %d", id, expected, br.expected)
	}
	br.arrived += bits.OnesCount32(exec)
	b.arrive(br, w)
	isRed := in.flag >= barRedPopc
	if isRed {
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			p := w.val(&in.s[2], l)&1 != 0
			if in.negc {
				p = !p
			}
			switch in.flag {
			case barRedPopc:
				br.red += b2u(p)
			case barRedAnd:
				br.red &= b2u(p)
			case barRedOr:
				br.red |= b2u(p)
			}
		}
	}
	if in.flag != barArrive {
		if in.aligned && b.l.check {
			// bar.sync is barrier.sync.aligned: one warp's lanes may arrive
			// at different times, but through the same instruction.
			for _, wt := range br.waiting {
				if wt.w == w && wt.pc != pc {
					return w.fail(in, l0, "synccheck", "%s executed by a diverged warp: other lanes of this warp wait at barrier %d through line %d (only barrier.sync without .aligned allows that)",
						opName(in), id, b.prog[wt.pc].line)
				}
			}
		}
		w.blocked |= exec
		br.waiting = append(br.waiting, barWait{w, exec, pc, isRed})
	}
	if br.arrived >= br.expected {
		b.stats.Barriers++
		for _, wt := range br.waiting {
			// The waiting lanes' pc[] is current; the warp's running lanes
			// may be on the converged fast path, so pin theirs first.
			wt.w.materialize()
			wt.w.blocked &^= wt.mask
			b.acquire(br, wt.w)
			if wt.red {
				for m := wt.mask; m != 0; m &= m - 1 {
					wt.w.set(&br.inst.d[0], bits.TrailingZeros32(m), br.red)
				}
			}
		}
		br.reset()
	}
	return nil
}

// deadlock reports a block where every live thread waits at a barrier that
// cannot complete.
func (b *block) deadlock() error {
	for _, w := range b.warps {
		if w.parked == 0 {
			continue
		}
		l0 := bits.TrailingZeros32(w.parked)
		in := &b.prog[w.pc[l0]]
		waiting := uint32(0)
		for m := w.parked; m != 0; m &= m - 1 {
			if l := bits.TrailingZeros32(m); w.pc[l] == w.pc[l0] {
				waiting |= 1 << l
			}
		}
		member := w.memberOf(in, l0)
		missing := member &^ waiting
		if missing == 0 {
			missing = ^waiting
		}
		return w.fail(in, bits.TrailingZeros32(missing), "synccheck",
			"%s executed by a diverged warp: lanes %#08x wait for lanes %#08x of membermask %#08x, which never arrive (they exited or wait elsewhere)",
			opName(in), waiting, missing, member)
	}
	for id := range b.bars {
		br := &b.bars[id]
		if br.arrived == 0 {
			continue
		}
		// Find the first thread that did not arrive.
		for _, w := range b.warps {
			for l := 0; l < 32 && w.id*32+l < b.nthr; l++ {
				waiting := false
				for _, wt := range br.waiting {
					if wt.w == w && wt.mask&(1<<l) != 0 {
						waiting = true
					}
				}
				if waiting {
					continue
				}
				why := "is waiting at another barrier"
				if w.live&(1<<l) == 0 {
					why = "exited without reaching it"
				}
				return &Error{Kind: "synccheck", Kernel: b.l.k.name, Line: int(br.line), Inst: br.inst.text,
					Thread: w.thread(l), Block: b.ctaid,
					Msg: fmt.Sprintf("barrier %d reached by only %d of %d threads (deadlock): this thread %s", id, br.arrived, br.expected, why)}
			}
		}
	}
	return &Error{Kind: "synccheck", Kernel: b.l.k.name, Block: b.ctaid, Msg: "deadlock: no thread can make progress"}
}

// memberOf is the set of lanes a warp collective needs: its membermask, or
// the whole warp for the .aligned ldmatrix and mma.
func (w *warp) memberOf(in *inst, l int) uint32 {
	switch in.op {
	case opShfl:
		return uint32(w.val(&in.s[3], l))
	case opVote, opMatch, opRedux:
		return uint32(w.val(&in.s[1], l))
	case opBarWarp:
		return uint32(w.val(&in.s[0], l))
	}
	return fullWarp
}

// releaseWarpSync completes a bar.warp.sync when every other lane of its
// membermask waits at a bar.warp.sync with the same mask: since sm_70 the
// lanes need not use the same instruction. The waiting lanes move past
// their own instruction. w must be materialized.
func (w *warp) releaseWarpSync(member, exec uint32) bool {
	missing := member & w.live &^ exec
	if missing&^w.parked != 0 {
		return false
	}
	for m := missing; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		if in := &w.b.prog[w.pc[l]]; in.op != opBarWarp || w.memberOf(in, l) != member {
			return false
		}
	}
	for m := missing; m != 0; m &= m - 1 {
		w.pc[bits.TrailingZeros32(m)]++
	}
	w.parked &^= missing
	return true
}

// rendezvous gathers the lanes of a warp collective: lanes arriving before
// the rest of their membermask park at the instruction until the others
// come (as .sync instructions wait on the GPU). It reports whether all are
// here. Lanes outside the membermask, and .aligned instructions in a warp
// with exited lanes, are errors.
func (w *warp) rendezvous(in *inst, pc int32, mask, exec uint32) (bool, error) {
	if exec == 0 {
		return true, nil
	}
	l0 := bits.TrailingZeros32(exec)
	member := w.memberOf(in, l0)
	if extra := exec &^ member; extra != 0 && w.b.l.check {
		return false, w.fail(in, bits.TrailingZeros32(extra), "synccheck",
			"%s executed by a lane not in membermask %#08x", opName(in), member)
	}
	if member == fullWarp && w.live != fullWarp && (in.op == opMma || in.op == opLdmatrix) {
		return false, w.fail(in, bits.TrailingZeros32(^w.live), "synccheck",
			"%s executed by a diverged warp: active mask %#08x, all 32 lanes must execute it", opName(in), exec)
	}
	if member&w.live&^exec == 0 {
		return true, nil
	}
	w.materialize()
	if in.op == opBarWarp && w.releaseWarpSync(member, exec) {
		return true, nil
	}
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		if exec&(1<<l) != 0 {
			w.pc[l] = pc
		} else {
			w.pc[l] = pc + 1
		}
	}
	w.parked |= exec
	w.parkLive = w.live
	return false, nil
}
