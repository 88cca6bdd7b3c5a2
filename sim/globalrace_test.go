package sim

import (
	"slices"
	"strings"
	"testing"
)

// handoff is the split reductions' last-block protocol: thread 0 of every
// block writes its partial (ctaid+1), fences and draws a ticket; the block
// with the last ticket fences and sums every partial into out, then resets
// the counter for the next launch. WFENCE and RFENCE are the two fences the
// tests remove; PARTIAL the store they can replace.
const handoff = `
	.shared .align 4 .u32 last;
	.reg .b64 %rd<8>;
	.reg .b32 %r<9>;
	.reg .pred %p<3>;
	ld.param.u64 %rd1, [p];
	ld.param.u64 %rd2, [out];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %nctaid.x;
	mov.u32 %r3, %tid.x;
	mul.wide.u32 %rd5, %r2, 4;
	add.s64 %rd6, %rd1, %rd5;
	setp.ne.u32 %p1, %r3, 0;
	@%p1 bra SKIP;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd1, %rd3;
	add.u32 %r4, %r1, 1;
	PARTIAL
	WFENCE
	atom.global.add.u32 %r5, [%rd6], 1;
	sub.u32 %r6, %r2, 1;
	setp.eq.u32 %p2, %r5, %r6;
	selp.u32 %r7, 1, 0, %p2;
	st.shared.u32 [last], %r7;
SKIP:
	bar.sync 0;
	ld.shared.u32 %r7, [last];
	setp.eq.u32 %p2, %r7, 0;
	@%p2 bra DONE;
	RFENCE
	@%p1 bra DONE;
	mov.u32 %r4, 0;
	mov.u32 %r6, 0;
LOOP:
	mul.wide.u32 %rd3, %r6, 4;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.u32 %r5, [%rd4];
	add.u32 %r4, %r4, %r5;
	add.u32 %r6, %r6, 1;
	setp.lt.u32 %p2, %r6, %r2;
	@%p2 bra LOOP;
	st.global.u32 [%rd2], %r4;
	st.global.u32 [%rd6], 0;
DONE:
	ret;`

// onePerBlock is a kernel whose thread 0 of each block runs body with %r1 =
// %ctaid.x, %r2 = %nctaid.x and %rd1 = p.
func onePerBlock(body string) string {
	return kernel(".param .u64 p, .param .u64 out", `
	.reg .b64 %rd<8>;
	.reg .b32 %r<9>;
	.reg .b16 %h<2>;
	.reg .pred %p<2>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %nctaid.x;
	mov.u32 %r3, %tid.x;
	setp.ne.u32 %p1, %r3, 0;
	@%p1 bra END;
`+body+`
END:
	ret;`)
}

func TestGlobalRacecheck(t *testing.T) {
	handoffWith := func(r ...string) string {
		src := handoff
		for i := 0; i < len(r); i += 2 {
			src = strings.Replace(src, r[i], r[i+1], 1)
		}
		return kernel(".param .u64 p, .param .u64 out", src)
	}
	good := []string{"PARTIAL", "st.global.u32 [%rd4], %r4;", "WFENCE", "fence.acq_rel.gpu;", "RFENCE", "fence.acq_rel.gpu;"}
	with := func(k, v string) []string {
		r := slices.Clone(good)
		r[slices.Index(r, k)+1] = v
		return r
	}
	tests := []struct {
		name string
		src  string
		want []string // substrings of the racecheck error; nil: no race
		// inOrderOnly: the racing read happens only when the writer ran first
		// (a reader that sees no flag reads nothing).
		inOrderOnly bool
	}{
		{"hand-off", handoffWith(good...), nil, false},
		{"hand-off with membar.gl", handoffWith(with("WFENCE", "membar.gl;")...), nil, false},
		{"hand-off with atom.release", strings.Replace(handoffWith(with("WFENCE", "")...), "atom.global.add", "atom.release.gpu.global.add", 1), nil, false},
		{"hand-off without the writers' fence", handoffWith(with("WFENCE", "")...),
			[]string{"global-memory race", "reads byte", "written by block", "line 42 (ld.global.u32"}, false},
		{"hand-off without the last block's fence", handoffWith(with("RFENCE", "")...),
			[]string{"global-memory race", "reads byte"}, false},
		{"hand-off with cta-scope fences", handoffWith(with("WFENCE", "fence.acq_rel.cta;")...),
			[]string{"global-memory race"}, false},
		{"same word from every block", onePerBlock(`	st.global.u32 [%rd1], %r1;`),
			[]string{"global-memory race", "block (1,0,0) writes byte", "written by block (0,0,0) at line 17 (st.global.u32 [%rd1], %r1)"}, false},
		{"read the neighbour's write", onePerBlock(`
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;
	xor.b32 %r4, %r1, 1;
	mul.wide.u32 %rd2, %r4, 4;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.u32 %r5, [%rd3];`), []string{"global-memory race", "block (1,0,0) writes byte", "read by block (0,0,0) at line 24"}, false},
		{"write what another block read", onePerBlock(`
	xor.b32 %r4, %r1, 1;
	mul.wide.u32 %rd2, %r4, 4;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.u32 %r5, [%rd3];
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;`), []string{"global-memory race", "block (1,0,0) reads byte", "written by block (0,0,0) at line 24"}, false},
		{"atomics on one word", onePerBlock(`	atom.global.add.u32 %r5, [%rd1], %r1;
	red.global.max.u32 [%rd1], %r1;`), nil, false},
		{"cta-scope atomics on one word", onePerBlock(`	atom.cta.global.add.u32 %r5, [%rd1], %r1;`),
			[]string{"global-memory race", "accesses atomically"}, false},
		{"cluster-scope atomics on one word", onePerBlock(`	atom.cluster.global.add.u32 %r5, [%rd1], %r1;`),
			[]string{"global-memory race", "accesses atomically"}, false},
		{"hand-off with the partial written after the fence", handoffWith("PARTIAL", "", "WFENCE", "fence.acq_rel.gpu;\n\tst.global.u32 [%rd4], %r4;", "RFENCE", "fence.acq_rel.gpu;"),
			[]string{"global-memory race", "reads byte"}, false},
		// Block 0 releases at L, block 1 acquires at L and releases at M, block 2 acquires at
		// M and reads block 0's data: ordered through block 1, but only if block 1 fences
		// between (a relaxed atomic alone publishes nothing).
		{"release chain through a second block", onePerBlock(strings.Replace(`	setp.eq.u32 %p1, %r1, 0;
	@!%p1 bra B1;
	st.global.u32 [%rd1+12], 5;
	fence.acq_rel.gpu;
	atom.global.add.u32 %r5, [%rd1+4], 1;
	bra END;
B1:
	setp.eq.u32 %p1, %r1, 1;
	@!%p1 bra B2;
	ld.acquire.gpu.global.u32 %r5, [%rd1+4];
	setp.eq.u32 %p1, %r5, 0;
	@%p1 bra END;
	BFENCE
	atom.global.add.u32 %r5, [%rd1+8], 1;
	bra END;
B2:
	setp.eq.u32 %p1, %r1, 2;
	@!%p1 bra END;
	ld.acquire.gpu.global.u32 %r5, [%rd1+8];
	setp.eq.u32 %p1, %r5, 0;
	@%p1 bra END;
	ld.global.u32 %r6, [%rd1+12];`, "BFENCE", "fence.acq_rel.gpu;", 1)), nil, false},
		{"release chain broken in the second block", onePerBlock(strings.Replace(`	setp.eq.u32 %p1, %r1, 0;
	@!%p1 bra B1;
	st.global.u32 [%rd1+12], 5;
	fence.acq_rel.gpu;
	atom.global.add.u32 %r5, [%rd1+4], 1;
	bra END;
B1:
	setp.eq.u32 %p1, %r1, 1;
	@!%p1 bra B2;
	ld.acquire.gpu.global.u32 %r5, [%rd1+4];
	setp.eq.u32 %p1, %r5, 0;
	@%p1 bra END;
	BFENCE
	atom.global.add.u32 %r5, [%rd1+8], 1;
	bra END;
B2:
	setp.eq.u32 %p1, %r1, 2;
	@!%p1 bra END;
	ld.acquire.gpu.global.u32 %r5, [%rd1+8];
	setp.eq.u32 %p1, %r5, 0;
	@%p1 bra END;
	ld.global.u32 %r6, [%rd1+12];`, "BFENCE", "", 1)),
			[]string{"global-memory race", "block (2,0,0) reads byte", "written by block (0,0,0)"}, true},
		// Two blocks read a word, then the second writes it: the write races with the first's
		// read although the second's own read came later.
		{"write after two readers", onePerBlock(`
	ld.global.u32 %r5, [%rd1];
	setp.eq.u32 %p1, %r1, 1;
	@%p1 st.global.u32 [%rd1], 1;`), []string{"global-memory race", "block (1,0,0) writes byte", "read by block (0,0,0)"}, false},
		{"atomic on another block's plain write", onePerBlock(`
	setp.eq.u32 %p1, %r1, 0;
	@%p1 st.global.u32 [%rd1], 7;
	@!%p1 atom.global.add.u32 %r5, [%rd1], 1;`), []string{"global-memory race", "accesses atomically", "written by block (0,0,0)"}, false},
		{"relaxed loads and stores", onePerBlock(`	st.relaxed.gpu.global.u32 [%rd1], %r1;
	ld.volatile.global.u32 %r5, [%rd1];`), nil, false},
		{"neighbouring halves", onePerBlock(`
	mul.wide.u32 %rd2, %r1, 2;
	add.s64 %rd3, %rd1, %rd2;
	cvt.u16.u32 %h1, %r1;
	st.global.u16 [%rd3], %h1;`), nil, false},
		{"release store, acquire load", onePerBlock(`
	setp.eq.u32 %p1, %r1, 0;
	@!%p1 bra READ;
	st.global.u32 [%rd1+8], 5;
	st.release.gpu.global.u32 [%rd1+4], 1;
	bra END;
READ:
	ld.acquire.gpu.global.u32 %r5, [%rd1+4];
	setp.eq.u32 %p1, %r5, 0;
	@%p1 bra END;   // not published yet: a real reader would wait
	ld.global.u32 %r6, [%rd1+8];`), nil, false},
		{"relaxed store, relaxed load, no fences", onePerBlock(`
	setp.eq.u32 %p1, %r1, 0;
	@!%p1 bra READ;
	st.global.u32 [%rd1+8], 5;
	st.relaxed.gpu.global.u32 [%rd1+4], 1;
	bra END;
READ:
	ld.relaxed.gpu.global.u32 %r5, [%rd1+4];
	setp.eq.u32 %p1, %r5, 0;
	@%p1 bra END;
	ld.global.u32 %r6, [%rd1+8];`), []string{"global-memory race", "block (1,0,0) reads byte", "written by block (0,0,0) at line 20"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range []BlockOrder{InOrder, Reverse, RandomOrder} {
				dev := NewDevice()
				m := load(t, dev, tc.src)
				const blocks = 6
				p := upload(t, dev, make([]byte, 4*blocks+4))
				out := upload(t, dev, make([]byte, 4))
				cfg := grid(blocks, 64)
				cfg.RaceGlobal, cfg.Order, cfg.Seed = true, order, 3
				_, err := m.Launch("k", cfg, p, out)
				if tc.want == nil || tc.inOrderOnly && order != InOrder {
					if err != nil {
						t.Fatalf("%v: %v", order, err)
					}
					continue
				}
				if order != InOrder {
					// The blocks named depend on the order; that a race is found does not.
					mustErr(t, err, "racecheck", tc.want[0])
					continue
				}
				mustErr(t, err, "racecheck", append([]string{"kernel k"}, tc.want...)...)
				// Without the check the same launch passes: the simulator is sequentially consistent.
				// One worker: blocks that race on purpose must not race in the simulator's own memory
				// (go test -race).
				cfg.RaceGlobal, cfg.Workers = false, 1
				dev = NewDevice()
				if _, err := load(t, dev, tc.src).Launch("k", cfg, upload(t, dev, make([]byte, 4*blocks+4)), upload(t, dev, make([]byte, 4))); err != nil {
					t.Fatalf("without the global racecheck: %v", err)
				}
			}
		})
	}
}

// The hand-off sums every partial whatever order the blocks run in, and
// leaves its counter at zero for the next launch.
func TestGlobalRacecheckHandoffResult(t *testing.T) {
	src := kernel(".param .u64 p, .param .u64 out", strings.NewReplacer("PARTIAL", "st.global.u32 [%rd4], %r4;",
		"WFENCE", "fence.acq_rel.gpu;", "RFENCE", "fence.acq_rel.gpu;").Replace(handoff))
	dev := NewDevice()
	m := load(t, dev, src)
	const blocks = 37
	p := upload(t, dev, make([]byte, 4*blocks+4))
	out := upload(t, dev, make([]byte, 4))
	for _, order := range []BlockOrder{InOrder, Reverse, RandomOrder} {
		cfg := grid(blocks, 64)
		cfg.RaceGlobal, cfg.Order = true, order
		if _, err := m.Launch("k", cfg, p, out); err != nil {
			t.Fatal(err)
		}
		if got := bytesU32s(download(t, dev, out, 4))[0]; got != blocks*(blocks+1)/2 {
			t.Errorf("%v: sum %d", order, got)
		}
		if c := bytesU32s(download(t, dev, p+4*blocks, 4))[0]; c != 0 {
			t.Errorf("%v: counter left at %d", order, c)
		}
	}
}

// Blocks start in the configured order: each block's thread 0 logs its
// index at the position of the ticket it draws.
func TestBlockOrder(t *testing.T) {
	src := onePerBlock(`
	atom.global.add.u32 %r5, [%rd1], 1;
	add.u32 %r5, %r5, 1;
	mul.wide.u32 %rd2, %r5, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;`)
	const n = 50
	run := func(order BlockOrder, seed uint64, workers int) []uint32 {
		dev := NewDevice()
		p := upload(t, dev, make([]byte, 4*n+4))
		cfg := grid(n, 32)
		cfg.Order, cfg.Seed, cfg.Workers = order, seed, workers
		if _, err := load(t, dev, src).Launch("k", cfg, p, p); err != nil {
			t.Fatal(err)
		}
		return bytesU32s(download(t, dev, p+4, 4*n))
	}
	in, rev := run(InOrder, 0, 1), run(Reverse, 0, 1)
	for i := range n {
		if in[i] != uint32(i) || rev[i] != uint32(n-1-i) {
			t.Fatalf("in order %v\nreverse %v", in, rev)
		}
	}
	r1, r1again, r2 := run(RandomOrder, 1, 1), run(RandomOrder, 1, 1), run(RandomOrder, 2, 1)
	if !slices.Equal(r1, r1again) || slices.Equal(r1, r2) || slices.Equal(r1, in) || slices.Equal(r1, rev) {
		t.Errorf("random orders: seed 1 %v, again %v, seed 2 %v", r1, r1again, r2)
	}
	for _, seed := range []uint64{1, 2, 99} {
		s := run(RandomOrder, seed, 2)
		slices.Sort(s)
		if !slices.Equal(s, in) {
			t.Errorf("seed %d with two workers: not a permutation: %v", seed, s)
		}
	}
	for _, n := range []int{1, 2, 3, 1000, 4097} {
		perm := RandomOrder.perm(n, 5)
		seen := make([]bool, n)
		for i := range n {
			j := perm(i)
			if j < 0 || j >= n || seen[j] {
				t.Fatalf("n %d: perm(%d) = %d repeats or is out of range", n, i, j)
			}
			seen[j] = true
		}
	}
	for _, o := range []BlockOrder{InOrder, Reverse, RandomOrder} {
		if p, err := ParseBlockOrder(o.String()); p != o || err != nil {
			t.Errorf("ParseBlockOrder(%q) = %v, %v", o, p, err)
		}
	}
	if _, err := ParseBlockOrder("sideways"); err == nil {
		t.Error("ParseBlockOrder accepted sideways")
	}
}

// Under the global racecheck blocks run one at a time whatever Workers
// says: each block counts itself in and out, and records the most blocks
// it saw running.
func TestGlobalRacecheckOneBlockAtATime(t *testing.T) {
	src := onePerBlock(`
	atom.global.add.u32 %r5, [%rd1], 1;
	add.u32 %r5, %r5, 1;
	atom.global.max.u32 %r6, [%rd1+4], %r5;
	mov.u32 %r7, 0;
SPIN:
	add.u32 %r7, %r7, 1;
	setp.lt.u32 %p1, %r7, 20000;
	@%p1 bra SPIN;
	atom.global.add.u32 %r5, [%rd1], -1;`)
	dev := NewDevice()
	p := upload(t, dev, make([]byte, 8))
	cfg := grid(16, 32)
	cfg.RaceGlobal, cfg.Workers = true, 4
	if _, err := load(t, dev, src).Launch("k", cfg, p, p); err != nil {
		t.Fatal(err)
	}
	if got := bytesU32s(download(t, dev, p, 8)); got[0] != 0 || got[1] != 1 {
		t.Errorf("running %d at the end, at most %d at once; want 0 and 1", got[0], got[1])
	}
}
