package sim

// The global-memory race check (Config.RaceGlobal) finds blocks of one
// launch that touch the same global byte without an order between them. The
// simulator itself is sequentially consistent, so such a kernel computes the
// expected bytes here and other bytes on a GPU, where blocks run
// concurrently and their writes become visible in no promised order.
//
// The model is the PTX memory model's, at the granularity of blocks:
//
//   - Two accesses to a byte conflict when they come from different blocks
//     and at least one writes. A conflict is a race unless both are morally
//     strong (atomics, and ld/st with .relaxed, .acquire, .release or
//     .volatile, at a scope wider than one block) or the first happens
//     before the second.
//   - Happens-before between blocks comes from release and acquire patterns
//     on one location L. A block releases at L when it writes L strongly
//     (atom, red, st.relaxed ...) after a gpu- or sys-scope fence
//     (fence.acq_rel, fence.sc, membar.gl, membar.sys), or with a .release
//     or .acq_rel instruction: what it did before that fence is published
//     at L. A block acquires at L when it reads L strongly (an atomic, or
//     ld.relaxed ...) and then executes such a fence, or with an .acquire or
//     .acq_rel instruction: it learns everything published at L so far.
//     This is the split reductions' hand-off: every block writes its
//     partial, fences and increments a counter; the block that draws the
//     last ticket fences and reads all partials.
//   - Orders compose: a block that acquired at L and then releases at M
//     passes on what it learned (vector clocks, one entry per block).
//
// Blocks run one at a time under the check, so "later" is well defined:
// each strong access to L observes every earlier strong write to L, as an
// RMW chain does. The check does not model: ordering between threads of
// one block (accesses of one block never race with each other here; shared
// memory has its own racecheck), fences and strong accesses at different
// positions in different threads of one block (the block is one agent:
// any thread's fence counts for the block), and the exact value a strong
// read observed (a read that saw an older value still counts as observing
// the newest release). Per byte it keeps the last write and the last reads
// of two different blocks, so a write racing only with an older third
// reader is missed.
type globalRace struct {
	pages    map[uint64]*racePage // by address >> racePageBits
	lastKey  uint64
	lastPage *racePage
	recs     []raceRec                   // access records; 0 means none
	cache    map[recKey]uint32           // the current block's records
	sync     map[uint64]map[int32]uint32 // per location: the epochs released there, per block

	// The block running now.
	cur     int32
	ep      uint32           // its epoch: accesses are stamped with it, fences advance it
	mark    uint32           // the epoch of its last fence (0: none yet)
	vc      map[int32]uint32 // the epochs of other blocks it has acquired
	pending []uint64         // locations read strongly since its last fence
}

const racePageBits = 12

type racePage struct {
	w, r1, r2 [1 << racePageBits]uint32 // record of the last write and of the last reads by two blocks
}

type raceRec struct {
	block  int32
	epoch  uint32
	in     *inst
	strong bool
}

type recKey struct {
	epoch  uint32
	in     *inst
	strong bool
}

func newGlobalRace() *globalRace {
	return &globalRace{pages: map[uint64]*racePage{}, recs: make([]raceRec, 1), cache: map[recKey]uint32{},
		sync: map[uint64]map[int32]uint32{}, vc: map[int32]uint32{}}
}

// start begins block idx: a fresh epoch and nothing acquired.
func (g *globalRace) start(idx int) {
	g.cur, g.ep, g.mark = int32(idx), 1, 0
	clear(g.vc)
	clear(g.cache)
	g.pending = g.pending[:0]
}

func (g *globalRace) page(addr uint64) *racePage {
	k := addr >> racePageBits
	if g.lastPage != nil && g.lastKey == k {
		return g.lastPage
	}
	p := g.pages[k]
	if p == nil {
		p = new(racePage)
		g.pages[k] = p
	}
	g.lastKey, g.lastPage = k, p
	return p
}

func (g *globalRace) record(in *inst, strong bool) uint32 {
	k := recKey{g.ep, in, strong}
	if id, ok := g.cache[k]; ok {
		return id
	}
	id := uint32(len(g.recs))
	g.recs = append(g.recs, raceRec{g.cur, g.ep, in, strong})
	g.cache[k] = id
	return id
}

// ordered reports whether the access r happens before the current block's next access.
func (g *globalRace) ordered(r *raceRec) bool {
	return r.block == g.cur || r.epoch <= g.vc[r.block]
}

// fence is a gpu-scope fence by the current block: strong reads since the
// last fence become acquires, and what the block did so far may be released.
func (g *globalRace) fence() {
	for _, loc := range g.pending {
		g.acquire(loc)
	}
	g.pending = g.pending[:0]
	g.mark = g.ep
	g.ep++
}

func (g *globalRace) acquire(loc uint64) {
	for b, e := range g.sync[loc] {
		if e > g.vc[b] {
			g.vc[b] = e
		}
	}
}

func (g *globalRace) release(loc uint64) {
	if g.mark == 0 {
		return
	}
	s := g.sync[loc]
	if s == nil {
		s = map[int32]uint32{}
		g.sync[loc] = s
	}
	s[g.cur] = max(s[g.cur], g.mark)
	for b, e := range g.vc {
		s[b] = max(s[b], e)
	}
}

// sync applies a strong access's ordering: an atomic or strong load reads
// loc (an acquire now with .acquire, else when a fence follows) and an
// atomic or strong store writes it (a release of what preceded the last
// fence, or of everything with .release).
func (g *globalRace) syncAccess(in *inst, loc uint64, kind uint8) {
	if kind != accWrite {
		if in.sem&semAcquire != 0 {
			g.acquire(loc)
		} else {
			g.pending = append(g.pending, loc)
		}
	}
	if kind != accRead {
		if in.sem&semRelease != 0 {
			g.mark = g.ep
			g.ep++
		}
		g.release(loc)
	}
}

// strong reports whether in is morally strong between blocks.
func strong(in *inst) bool { return in.sem&semStrong != 0 }

// globalRaceCheck checks and records lane's access of n bytes at global
// address addr (off bytes into allocation a).
func (w *warp) globalRaceCheck(in *inst, lane int, a *allocation, addr uint64, n int, kind uint8) error {
	g := w.b.l.grace
	st := strong(in)
	p := g.page(addr)
	o := int(addr & (1<<racePageBits - 1))
	verb := "reads"
	switch kind {
	case accWrite:
		verb = "writes"
	case accAtomic:
		verb = "accesses atomically"
	}
	me := g.record(in, st)
	for i := o; i < o+n; i++ {
		if wr := p.w[i]; wr != 0 {
			r := &g.recs[wr]
			if !(st && r.strong) && !g.ordered(r) {
				return w.globalRace(in, lane, a, addr+uint64(i-o), verb, "written", r)
			}
		}
		if kind == accRead {
			if r1 := p.r1[i]; r1 == 0 || g.recs[r1].block == g.cur {
				p.r1[i] = me
			} else {
				p.r1[i], p.r2[i] = me, r1
			}
			continue
		}
		for _, rd := range [2]uint32{p.r1[i], p.r2[i]} {
			if rd == 0 {
				continue
			}
			if r := &g.recs[rd]; !(st && r.strong) && !g.ordered(r) {
				return w.globalRace(in, lane, a, addr+uint64(i-o), verb, "read", r)
			}
		}
		p.w[i], p.r1[i], p.r2[i] = me, 0, 0
	}
	if st {
		g.syncAccess(in, addr, kind)
	}
	return nil
}

func (w *warp) globalRace(in *inst, lane int, a *allocation, at uint64, verb, what string, r *raceRec) error {
	l := w.b.l
	return w.fail(in, lane, "racecheck", "global-memory race: block %v %s byte %#x (%d bytes into %v), %s by block %v at line %d (%s) with no release/acquire order between the blocks",
		w.b.ctaid, verb, at, at-a.addr, a, what, l.cfg.Grid.unflatten(int(r.block)), r.in.line, r.in.text)
}

// Semantics of a memory instruction, in inst.sem.
const (
	semStrong  uint8 = 1 << iota // morally strong between blocks (relaxed, acquire, release, volatile; not .cta)
	semAcquire                   // .acquire or .acq_rel
	semRelease                   // .release or .acq_rel
	semFence                     // a fence with gpu or sys scope
)

// memSem reads the ordering qualifiers of ld, st, atom and red. Atomics
// are strong unless their scope is one block (a cluster is one block here).
func (o *opts) memSem(atomic bool) uint8 {
	var s uint8
	if atomic || o.has("relaxed") || o.has("acquire") || o.has("release") || o.has("acq_rel") || o.has("volatile") {
		s = semStrong
	}
	if o.has("acquire") || o.has("acq_rel") {
		s |= semAcquire
	}
	if o.has("release") || o.has("acq_rel") {
		s |= semRelease
	}
	if o.has("cta") || o.has("cluster") {
		return 0
	}
	return s
}
