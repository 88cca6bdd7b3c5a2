package sim

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Access kinds.
const (
	accRead uint8 = iota
	accWrite
	accAtomic // read-modify-write; exempt from racecheck
)

// raceShadow records, per shared-memory byte, the last write and each
// warp's last read, stamped with the accessing warp's clock. An earlier
// access of warp w stamped c happens before the current access of warp u
// when c <= vc[u][w]: barriers join the clocks of the warps that took part
// (see block.arrive), so a named barrier orders only its own warps. Threads
// of one warp are ordered by lockstep execution, so only accesses from
// different warps race.
type raceShadow struct {
	nw      int
	wThread []int32 // thread index+1 of the last write, 0 for none
	wClock  []uint32
	wLine   []int32
	rClock  []uint32 // [byte*nw+warp]: that warp's last read
	rLine   []int32
	rLane   []uint8
}

func (r *raceShadow) init(n, nw int) {
	r.nw = nw
	r.wThread, r.wClock, r.wLine = make([]int32, n), make([]uint32, n), make([]int32, n)
	r.rClock, r.rLine, r.rLane = make([]uint32, n*nw), make([]int32, n*nw), make([]uint8, n*nw)
}

// reset forgets every access. Blocks need not call it: a new block's clocks
// start above every stamp left behind (see block.startClocks).
func (r *raceShadow) reset() {
	clear(r.wThread)
	clear(r.wClock)
	clear(r.rClock)
}

func (w *warp) raceCheck(in *inst, lane int, off uint64, n int, write bool) error {
	b := w.b
	r := &b.race
	nw := r.nw
	me := int32(w.id*32+lane) + 1
	vc := b.vc[w.id*nw : (w.id+1)*nw]
	now := vc[w.id]
	for i := int(off); i < int(off)+n; i++ {
		if t := r.wThread[i]; t != 0 {
			if ww := int(t-1) / 32; ww != w.id && r.wClock[i] > vc[ww] {
				what := "reads"
				if write {
					what = "writes"
				}
				return w.fail(in, lane, "racecheck", "shared-memory race: this thread %s byte %#x, written by thread %v at line %d with no barrier in between",
					what, i, b.l.cfg.Block.unflatten(int(t-1)), r.wLine[i])
			}
		}
		j := i * nw
		if !write {
			r.rClock[j+w.id], r.rLine[j+w.id], r.rLane[j+w.id] = now, in.line, uint8(lane)
			continue
		}
		for rw, c := range r.rClock[j : j+nw] {
			if rw != w.id && c > vc[rw] {
				return w.fail(in, lane, "racecheck", "shared-memory race: this thread writes byte %#x, read by thread %v at line %d with no barrier in between",
					i, b.l.cfg.Block.unflatten(rw*32+int(r.rLane[j+rw])), r.rLine[j+rw])
			}
		}
		r.wThread[i], r.wClock[i], r.wLine[i] = me, now, in.line
	}
	return nil
}

// access returns the n bytes at addr in space sp as seen by lane, after the
// bounds, alignment, initialization and race checks.
func (w *warp) access(in *inst, sp space, addr uint64, n int, lane int, kind uint8) ([]byte, error) {
	b := w.b
	l := b.l
	if sp == spGeneric {
		switch {
		case addr >= sharedWin && addr < sharedWin+windowSize:
			sp, addr = spShared, addr-sharedWin
		case addr >= localWin && addr < localWin+windowSize:
			sp, addr = spLocal, addr-localWin
		default:
			sp = spGlobal
		}
	}
	verb := "load"
	if kind != accRead {
		verb = "store"
		if kind == accAtomic {
			verb = "atomic"
		}
	}
	if addr&uint64(n-1) != 0 {
		return nil, w.fail(in, lane, "memcheck", "misaligned %s %s of %d bytes at %#x (needs %d-byte alignment)", sp, verb, n, addr, n)
	}
	switch sp {
	case spGlobal, spConst:
		a := b.last
		if a == nil || addr < a.addr || !fits(addr-a.addr, n, a.size) {
			a = b.m.dev.find(addr, n)
			if a == nil {
				return nil, w.fail(in, lane, "memcheck", "out-of-bounds global %s of %d bytes at %#x: %s", verb, n, addr, b.m.dev.describe(addr))
			}
			b.last = a
		}
		off := addr - a.addr
		if kind != accRead && a.rdonly {
			return nil, w.fail(in, lane, "memcheck", "%s to read-only %v", verb, a)
		}
		// Writes are tracked even without checks, so a later checked
		// launch knows what an unchecked one wrote.
		if a.init == nil { // a module variable: every byte counts as written
		} else if i := trackInit(a.init[off:off+uint64(n)], kind, l.check); i >= 0 {
			return nil, w.fail(in, lane, "memcheck", "uninitialized global %s: byte %#x (%d bytes into %v) was never written", verb, addr+uint64(i), off+uint64(i), a)
		}
		if b.dep != nil && sp == spGlobal {
			if err := w.depCheck(in, lane, addr, n, kind); err != nil {
				return nil, err
			}
		}
		if l.grace != nil && sp == spGlobal {
			if err := w.globalRaceCheck(in, lane, a, addr, n, kind); err != nil {
				return nil, err
			}
		}
		return a.data[off : off+uint64(n)], nil
	case spShared:
		if !fits(addr, n, len(b.shared)) {
			return nil, w.fail(in, lane, "memcheck", "out-of-bounds shared %s of %d bytes at shared offset %#x (block has %d bytes of shared memory)", verb, n, addr, len(b.shared))
		}
		if l.check {
			if i := trackInit(b.sinit[addr:addr+uint64(n)], kind, true); i >= 0 {
				return nil, w.fail(in, lane, "memcheck", "uninitialized shared %s: shared byte %#x was never written", verb, addr+uint64(i))
			}
			if kind != accAtomic {
				if err := w.raceCheck(in, lane, addr, n, kind == accWrite); err != nil {
					return nil, err
				}
			}
		}
		return b.shared[addr : addr+uint64(n)], nil
	case spLocal:
		fs := uint64(b.m.frameSize)
		if !fits(addr, n, int(fs)) {
			return nil, w.fail(in, lane, "memcheck", "out-of-bounds local %s of %d bytes at local offset %#x (thread has %d bytes)", verb, n, addr, fs)
		}
		base := uint64(w.id*32+lane) * fs
		if b.linit != nil {
			if i := trackInit(b.linit[base+addr:base+addr+uint64(n)], kind, true); i >= 0 {
				return nil, w.fail(in, lane, "memcheck", "uninitialized local %s: local byte %#x was never written", verb, addr+uint64(i))
			}
		}
		return b.local[base+addr : base+addr+uint64(n)], nil
	case spKParam:
		if kind != accRead {
			return nil, w.fail(in, lane, "memcheck", "store to kernel parameter space")
		}
		if !fits(addr, n, len(l.params)) {
			return nil, w.fail(in, lane, "memcheck", "out-of-bounds parameter load of %d bytes at offset %d (parameters have %d bytes)", n, addr, len(l.params))
		}
		return l.params[addr : addr+uint64(n)], nil
	}
	return nil, w.fail(in, lane, "error", "bad state space")
}

// trackInit checks and updates the written-state of the bytes of one
// access: a read (when check) returns the index of the first never-written
// byte, or -1; a write marks the bytes. Bytes already marked are not
// written again, so atomics and flags other blocks poll do not race on them.
func trackInit(init []byte, kind uint8, check bool) int {
	if kind != accWrite && check {
		for i, v := range init {
			if v == 0 {
				return i
			}
		}
	}
	if kind != accRead {
		for i, v := range init {
			if v == 0 {
				init[i] = 1
			}
		}
	}
	return -1
}

// fits reports whether [off, off+n) lies within [0, size), without overflow.
func fits(off uint64, n, size int) bool {
	return off <= uint64(size) && uint64(size)-off >= uint64(n)
}

func getLE(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func putLE(b []byte, v uint64) {
	switch len(b) {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

// addrOf is lane's effective address for in.
func (w *warp) addrOf(in *inst, l int) uint64 { return w.val(&in.a, l) + uint64(in.off) }

// resolved is the state space a generic address falls in (for counters).
func resolved(sp space, addr uint64) space {
	if sp != spGeneric {
		return sp
	}
	switch {
	case addr >= sharedWin && addr < sharedWin+windowSize:
		return spShared
	case addr >= localWin && addr < localWin+windowSize:
		return spLocal
	}
	return spGlobal
}

func (w *warp) ldst(in *inst, exec uint32) error {
	if exec == 0 {
		return nil
	}
	es := in.t.size()
	total := es * int(in.n)
	kind := accRead
	if in.op == opSt {
		kind = accWrite
	}
	var addrs [32]uint64
	for m := exec; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		addr := w.addrOf(in, l)
		addrs[l] = addr
		unlock := func() {}
		if in.flag == ldOrdered && total <= 8 {
			unlock = w.b.m.dev.lockGlobal(resolved(in.space, addr), addr)
		}
		mem, err := w.access(in, in.space, addr, total, l, kind)
		if err != nil {
			unlock()
			return err
		}
		for i := 0; i < int(in.n); i++ {
			p := mem[i*es : (i+1)*es]
			if kind == accWrite {
				putLE(p, w.val(&in.s[i], l))
				continue
			}
			v := getLE(p)
			if in.t.signed() {
				v = uint64(in.t.sext(v))
			}
			w.set(&in.d[i], l, v)
		}
		unlock()
	}
	w.countMem(in, exec, &addrs, total, kind == accWrite)
	return nil
}

// countMem updates the coalescing and bank-conflict counters for one warp access.
func (w *warp) countMem(in *inst, exec uint32, addrs *[32]uint64, size int, store bool) {
	s := &w.b.stats
	l0 := bits.TrailingZeros32(exec)
	sp := resolved(in.space, addrs[l0])
	if sp == spGeneric || sp == spConst {
		sp = spGlobal
	}
	if in.space == spGeneric && sp != spGlobal {
		// Reclassify generic accesses by where they went.
		s.Classes[in.class]--
		s.Classes[memClass(store, sp)]++
	}
	switch sp {
	case spGlobal:
		var sectors [64]uint64
		ns := 0
		for m := exec; m != 0; m &= m - 1 {
			a := addrs[bits.TrailingZeros32(m)]
			for sec := a >> 5; sec <= (a+uint64(size)-1)>>5; sec++ {
				dup := false
				for i := ns - 1; i >= 0; i-- {
					if sectors[i] == sec {
						dup = true
						break
					}
				}
				if !dup && ns < len(sectors) {
					sectors[ns] = sec
					ns++
				}
			}
		}
		// Requested bytes count each distinct address once: lanes reading
		// the same word (a broadcast) are served by one fetch, so the ratio
		// to fetched sector bytes never exceeds 1.
		distinct := 0
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			dup := false
			for p := exec & (1<<l - 1); p != 0; p &= p - 1 {
				if addrs[bits.TrailingZeros32(p)] == addrs[l] {
					dup = true
					break
				}
			}
			if !dup {
				distinct++
			}
		}
		bytes := int64(size * distinct)
		if store {
			s.GlobalStores++
			s.GlobalStoreBytes += bytes
			s.GlobalStoreSectors += int64(ns)
		} else {
			s.GlobalLoads++
			s.GlobalLoadBytes += bytes
			s.GlobalLoadSectors += int64(ns)
		}
	case spShared:
		var offs [32]uint64
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			offs[l] = resolvedOffset(addrs[l])
		}
		wf, ideal := wavefronts(exec, &offs, size)
		s.SharedRequests++
		s.SharedWavefronts += int64(wf)
		s.SharedBankConflicts += int64(wf - ideal)
	}
}

func resolvedOffset(a uint64) uint64 {
	if a >= sharedWin && a < sharedWin+windowSize {
		return a - sharedWin
	}
	return a
}

// wavefronts models shared memory's 32 banks of 4 bytes: a warp access is
// split into phases of 128 bytes (one for ≤4-byte accesses, two for 8-byte,
// four for 16-byte); in each phase, distinct words in the same bank
// serialize. It returns the wavefronts needed and the conflict-free minimum.
func wavefronts(exec uint32, offs *[32]uint64, size int) (int, int) {
	phases := max(1, size*32/128)
	per := 32 / phases
	total, ideal := 0, 0
	for p := 0; p < phases; p++ {
		var words [32][]uint64
		var first [32]uint64
		var cnt [32]int
		worst := 0
		for l := p * per; l < (p+1)*per; l++ {
			if exec&(1<<l) == 0 {
				continue
			}
			for k := 0; k < max(1, size/4); k++ {
				word := offs[l]/4 + uint64(k)
				bank := word % 32
				switch {
				case cnt[bank] == 0:
					first[bank], cnt[bank] = word, 1
				case first[bank] == word:
				default:
					if words[bank] == nil {
						words[bank] = []uint64{first[bank]}
					}
					dup := false
					for _, x := range words[bank] {
						dup = dup || x == word
					}
					if !dup {
						words[bank] = append(words[bank], word)
						cnt[bank]++
					}
				}
				worst = max(worst, cnt[bank])
			}
		}
		if worst > 0 {
			total += worst
			ideal++
		}
	}
	return total, ideal
}

// lockGlobal serializes an access to global memory with the atomics of
// other blocks on the same 8 bytes; it returns the unlock function.
// Atomics and .volatile/.relaxed/.acquire/.release accesses take it, so
// flags and spin loops across blocks behave, and are race-free in Go.
func (d *Device) lockGlobal(sp space, addr uint64) func() {
	if sp != spGlobal {
		return func() {}
	}
	mu := &d.atomMu[(addr>>3)%uint64(len(d.atomMu))]
	mu.Lock()
	return mu.Unlock
}

func (w *warp) atomic(in *inst, exec uint32) error {
	dev := w.b.m.dev
	t := in.t
	sz := t.size()
	for m := exec; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m)
		addr := w.addrOf(in, l)
		b, c := w.val(&in.s[0], l), w.val(&in.s[1], l)
		unlock := dev.lockGlobal(resolved(in.space, addr), addr)
		mem, err := w.access(in, in.space, addr, sz, l, accAtomic)
		if err != nil {
			unlock()
			return err
		}
		old := getLE(mem)
		putLE(mem, atomOp(in, t, old, b, c))
		unlock()
		if t.signed() {
			old = uint64(t.sext(old))
		}
		w.set(&in.d[0], l, old)
	}
	return nil
}

func atomOp(in *inst, t ptype, old, b, c uint64) uint64 {
	m := t.mask()
	switch in.flag {
	case atomAdd:
		switch t {
		case tF32:
			// atom.add.f32 rounds to nearest and flushes subnormals to zero.
			return ftz32(canon32(float32(f32(ftz32(old)) + f32(ftz32(b)))))
		case tF64:
			return math.Float64bits(f64(old) + f64(b))
		case tF16, tBF16, tF16x2, tBF16x2:
			in2 := inst{rnd: rn}
			return floatOp(t, func(x, y, _ float64) float64 { return oddAdd(x, y) })(&in2, old, b, 0, 0)
		}
		return (old + b) & m
	case atomMin, atomMax:
		isMax := in.flag == atomMax
		if t.isFloat() {
			in2 := inst{}
			return fMinMax(t, isMax, false)(&in2, old, b, 0, 0)
		}
		less := old&m < b&m
		if t.signed() {
			less = t.sext(old) < t.sext(b)
		}
		if less != isMax {
			return old
		}
		return b & m
	case atomInc:
		if old&m >= b&m {
			return 0
		}
		return (old + 1) & m
	case atomDec:
		if old&m == 0 || old&m > b&m {
			return b & m
		}
		return (old - 1) & m
	case atomExch:
		return b & m
	case atomCas:
		if old&m == b&m {
			return c & m
		}
		return old
	case atomAnd:
		return old & b & m
	case atomOr:
		return (old | b) & m
	}
	return (old ^ b) & m
}

func opName(in *inst) string {
	for i := 0; i < len(in.text); i++ {
		if in.text[i] == ' ' {
			if in.text[0] == '@' {
				continue
			}
			return in.text[:i]
		}
	}
	return in.text
}

func (w *warp) collective(in *inst, exec uint32) error {
	if exec == 0 {
		return nil
	}
	l0 := bits.TrailingZeros32(exec)
	switch in.op {
	case opActivemask:
		for m := exec; m != 0; m &= m - 1 {
			w.set(&in.d[0], bits.TrailingZeros32(m), uint64(exec))
		}
		return nil
	case opShfl:
		var out [32]uint64
		var ok [32]bool
		for m := exec; m != 0; m &= m - 1 {
			lane := bits.TrailingZeros32(m)
			bval := int(w.val(&in.s[1], lane) & 31)
			c := w.val(&in.s[2], lane)
			cval, seg := int(c&31), int(c>>8&31)
			maxLane := lane&seg | cval&^seg
			minLane := lane & seg
			var j int
			var p bool
			switch in.flag {
			case shflUp:
				j = lane - bval
				p = j >= maxLane
			case shflDown:
				j = lane + bval
				p = j <= maxLane
			case shflBfly:
				j = lane ^ bval
				p = j <= maxLane
			default:
				j = minLane | bval&^seg
				p = j <= maxLane
			}
			if !p {
				j = lane
			}
			out[lane], ok[lane] = w.val(&in.s[0], j), p
		}
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			w.set(&in.d[0], l, out[l])
			w.set(&in.d[1], l, b2u(ok[l]))
		}
	case opVote:
		var ballot uint32
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			p := w.val(&in.s[0], l)&1 != 0
			if p != in.negc {
				ballot |= 1 << l
			}
		}
		var r uint64
		switch in.flag {
		case voteAll:
			r = b2u(ballot == exec)
		case voteAny:
			r = b2u(ballot != 0)
		case voteUni:
			r = b2u(ballot == 0 || ballot == exec)
		default:
			r = uint64(ballot)
		}
		for m := exec; m != 0; m &= m - 1 {
			w.set(&in.d[0], bits.TrailingZeros32(m), r)
		}
	case opRedux:
		// The same combining rules as the atomics, folded in lane order.
		var acc uint64
		first := true
		for m := exec; m != 0; m &= m - 1 {
			v := w.val(&in.s[0], bits.TrailingZeros32(m)) & in.t.mask()
			if first {
				acc, first = v, false
				continue
			}
			acc = atomOp(in, in.t, acc, v, 0)
		}
		for m := exec; m != 0; m &= m - 1 {
			w.set(&in.d[0], bits.TrailingZeros32(m), acc)
		}
	case opMatch:
		allSame := true
		v0 := w.val(&in.s[0], l0)
		for m := exec; m != 0; m &= m - 1 {
			allSame = allSame && w.val(&in.s[0], bits.TrailingZeros32(m)) == v0
		}
		for m := exec; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			v := w.val(&in.s[0], l)
			if in.flag == 1 {
				w.set(&in.d[0], l, uint64(exec)*b2u(allSame))
				w.set(&in.d[1], l, b2u(allSame))
				continue
			}
			var same uint32
			for k := exec; k != 0; k &= k - 1 {
				j := bits.TrailingZeros32(k)
				if w.val(&in.s[0], j) == v {
					same |= 1 << j
				}
			}
			w.set(&in.d[0], l, uint64(same))
		}
	}
	return nil
}
