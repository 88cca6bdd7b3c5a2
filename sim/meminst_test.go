package sim

import (
	"fmt"
	"strings"
	"testing"
)

// A memCase runs a body of PTX in one thread (or one warp) of a kernel with
// in = {0x1000, 0x1001, ...} (64 words, global), out (2 words) and shared
// s[64] (256 bytes, %r9 holds its address); the body leaves results in %r1
// and %r2, which the kernel stores to out[0] and out[1] (lane 0's).
type memCase struct {
	name string
	body string
	want [2]uint32
	warp bool // run a full warp (ldmatrix needs one)
}

const memKernel = `
.visible .entry NAME(.param .u64 in, .param .u64 out)
{
	.shared .align 16 .b8 s[256];
	.reg .pred %%p<3>;
	.reg .b32 %%r<12>;
	.reg .b64 %%rd<8>;
	ld.param.u64 %%rd1, [in];
	ld.param.u64 %%rd2, [out];
	cvta.to.global.u64 %%rd1, %%rd1;
	cvta.to.global.u64 %%rd2, %%rd2;
	mov.u32 %%r9, s;
	mov.u32 %%r10, %%laneid;
	mov.u32 %%r1, 0;
	mov.u32 %%r2, 0;
%s
	setp.ne.u32 %%p2, %%r10, 0;
	@%%p2 bra DONE;
	st.global.v2.u32 [%%rd2], {%%r1, %%r2};
DONE:
	ret;
}
`

var memCases = []memCase{
	// Cache hints and "::" sub-qualifiers are accepted and change nothing.
	{name: "ld L1::evict_last", body: "ld.global.L1::evict_last.u32 %r1, [%rd1+4];", want: [2]uint32{0x1001}},
	{name: "ld L1::no_allocate L2::64B", body: "ld.global.L1::no_allocate.L2::64B.u32 %r1, [%rd1+8];", want: [2]uint32{0x1002}},
	{name: "ld nc L2::128B v2", body: "ld.global.nc.L1::evict_first.L2::128B.v2.u32 {%r1, %r2}, [%rd1+16];", want: [2]uint32{0x1004, 0x1005}},
	{name: "ld L2::256B", body: "ld.global.L2::256B.u32 %r1, [%rd1+252];", want: [2]uint32{0x103F}},
	{name: "st L1::evict_unchanged", body: "st.global.L1::evict_unchanged.u32 [%rd1], 7;\n\tld.global.u32 %r1, [%rd1];", want: [2]uint32{7}},
	{name: "shared::cta", body: "st.shared::cta.u32 [s+8], 5;\n\tld.shared::cta.u32 %r1, [%r9+8];", want: [2]uint32{5}},
	{name: "prefetch", body: "prefetch.global.L1 [%rd1];\n\tprefetch.global.L2::evict_last [%rd1];\n\tprefetch.L2 [%rd1];\n\tprefetchu.L1 [%rd1];\n\tld.global.u32 %r1, [%rd1+12];", want: [2]uint32{0x1003}},
	{name: "cp.async shared::cta L2::128B", body: `cp.async.ca.shared::cta.global.L2::128B [%r9], [%rd1+16], 16;
	cp.async.cg.shared.global.L2::256B [%r9+16], [%rd1+32], 16, 4;
	cp.async.commit_group;
	cp.async.wait_group 0;
	ld.shared.u32 %r1, [%r9+4];
	ld.shared.u32 %r2, [%r9+20];`, want: [2]uint32{0x1005, 0}},
	{name: "ldmatrix shared::cta", warp: true, body: `shl.b32 %r3, %r10, 2;
	mul.wide.u32 %rd3, %r10, 4;
	add.s64 %rd3, %rd1, %rd3;
	ld.global.u32 %r4, [%rd3];
	add.s32 %r5, %r9, %r3;
	st.shared.u32 [%r5], %r4;
	bar.warp.sync -1;
	and.b32 %r6, %r10, 7;
	shl.b32 %r6, %r6, 4;
	add.s32 %r6, %r9, %r6;
	ldmatrix.sync.aligned.m8n8.x1.shared::cta.b16 {%r1}, [%r6];
	shfl.sync.idx.b32 %r2, %r1, 5, 31, -1;`, want: [2]uint32{0x1000, 0x1005}},
	// Atomics: the old value and the memory after.
	{name: "atom exch", body: "atom.global.exch.b32 %r1, [%rd1+8], 77;\n\tld.global.u32 %r2, [%rd1+8];", want: [2]uint32{0x1002, 77}},
	{name: "atom and", body: "atom.global.and.b32 %r1, [%rd1+12], 0xFF0;\n\tld.global.u32 %r2, [%rd1+12];", want: [2]uint32{0x1003, 0x0000}},
	{name: "atom or", body: "atom.global.or.b32 %r1, [%rd1+12], 0xF0;\n\tld.global.u32 %r2, [%rd1+12];", want: [2]uint32{0x1003, 0x10F3}},
	{name: "atom xor", body: "atom.global.xor.b32 %r1, [%rd1+12], 0x1010;\n\tld.global.u32 %r2, [%rd1+12];", want: [2]uint32{0x1003, 0x0013}},
	{name: "atom cas global", body: "atom.global.cas.b32 %r1, [%rd1+4], 0x1001, 9;\n\tatom.global.cas.b32 %r2, [%rd1+4], 0x1001, 10;", want: [2]uint32{0x1001, 9}},
	{name: "atom shared cas", body: "st.shared.u32 [s], 5;\n\tatom.shared.cas.b32 %r1, [s], 5, 9;\n\tld.shared.u32 %r2, [s];", want: [2]uint32{5, 9}},
	{name: "atom shared cas fails", body: "st.shared.u32 [s], 5;\n\tatom.shared.cas.b32 %r1, [s], 6, 9;\n\tld.shared.u32 %r2, [s];", want: [2]uint32{5, 5}},
	{name: "atom shared exch", body: "st.shared.u32 [%r9+4], 5;\n\tatom.shared.exch.b32 %r1, [%r9+4], 8;\n\tld.shared.u32 %r2, [%r9+4];", want: [2]uint32{5, 8}},
	{name: "atom shared exch b64", body: "st.shared.u64 [s+8], 0x100000005;\n\tatom.shared.exch.b64 %rd4, [s+8], 3;\n\tmov.b64 {%r1, %r2}, %rd4;", want: [2]uint32{5, 1}},
	{name: "red shared add", body: "st.shared.u32 [s], 5;\n\tred.shared.add.u32 [s], 3;\n\tred.shared.max.s32 [s], -1;\n\tld.shared.u32 %r1, [s];", want: [2]uint32{8}},
	{name: "red shared xor", body: "st.shared.u32 [s], 5;\n\tred.shared.xor.b32 [s], 3;\n\tld.shared.u32 %r1, [s];", want: [2]uint32{6}},
	// exit ends the thread: nothing after it runs.
	{name: "exit", body: "mov.u32 %r1, 7;\n\tst.global.v2.u32 [%rd2], {%r1, %r2};\n\texit;\n\tmov.u32 %r1, 9;", want: [2]uint32{7}},
	{name: "membar fence", body: "membar.cta;\n\tmembar.gl;\n\tmembar.sys;\n\tfence.acq_rel.gpu;\n\tfence.sc.cta;\n\tfence.acq_rel.sys;\n\tfence.proxy.alias;\n\tmov.u32 %r1, 1;", want: [2]uint32{1}},
	// Special registers: %clock and %globaltimer count the block's warp
	// instructions, so two reads in a row differ by one.
	{name: "clock", body: "mov.u32 %r3, %clock;\n\tmov.u32 %r4, %clock;\n\tsub.s32 %r1, %r4, %r3;", want: [2]uint32{1}},
	{name: "clock64 globaltimer", body: "mov.u64 %rd3, %clock64;\n\tmov.u64 %rd4, %globaltimer;\n\tsub.s64 %rd5, %rd4, %rd3;\n\tcvt.u32.u64 %r1, %rd5;\n\tmov.u32 %r2, %globaltimer_hi;", want: [2]uint32{1, 0}},
	{name: "globaltimer_lo", body: "mov.u64 %rd3, %globaltimer;\n\tmov.u32 %r3, %globaltimer_lo;\n\tcvt.u32.u64 %r4, %rd3;\n\tsub.s32 %r1, %r3, %r4;", want: [2]uint32{1}},
	{name: "smid warpid", body: "mov.u32 %r1, %smid;\n\tmov.u32 %r2, %warpid;", want: [2]uint32{0, 0}},
}

// memCases90 need sm_90.
var memCases90 = []memCase{
	{name: "shared::cluster", body: "st.shared::cluster.u32 [s+4], 6;\n\tld.shared::cluster.u32 %r1, [%r9+4];\n\tld.shared::cta.u32 %r2, [s+4];", want: [2]uint32{6, 6}},
}

func TestMemoryInstructionTable(t *testing.T)     { runMemTable(t, "sm_80", memCases, "sm_80", "sm_90") }
func TestMemoryInstructionTableSM90(t *testing.T) { runMemTable(t, "sm_90", memCases90, "sm_90") }

func runMemTable(t *testing.T, target string, cases []memCase, archs ...string) {
	var b strings.Builder
	b.WriteString(".version 7.8\n.target " + target + "\n.address_size 64\n")
	for i, c := range cases {
		b.WriteString(strings.Replace(fmt.Sprintf(memKernel, "\t"+c.body), "NAME", fmt.Sprintf("k%d", i), 1))
	}
	src := b.String()
	dev := NewDevice()
	m := load(t, dev, src)
	in := make([]uint32, 64)
	for i := range in {
		in[i] = 0x1000 + uint32(i)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			din := upload(t, dev, u32sBytes(in))
			out := upload(t, dev, make([]byte, 8))
			threads := 1
			if c.warp {
				threads = 32
			}
			if _, err := m.Launch(fmt.Sprintf("k%d", i), grid(1, threads), din, out); err != nil {
				t.Fatal(err)
			}
			if got := bytesU32s(download(t, dev, out, 8)); got[0] != c.want[0] || got[1] != c.want[1] {
				t.Errorf("out = %#x, want %#x", got, c.want)
			}
		})
	}
	t.Run("ptxas", func(t *testing.T) { assembles(t, src, archs...) })
}
