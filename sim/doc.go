// Package sim executes PTX kernels on the CPU: a simulated GPU with its own
// 64-bit memory, warps of 32 lanes in lockstep, and the checks a GPU
// sanitizer gives (memcheck, racecheck, synccheck), plus hardware-style
// counters.
//
// A Device owns global memory. Load decodes PTX text once into a Module;
// Launch runs one of its kernels over a grid:
//
//	dev := sim.NewDevice()
//	m, err := dev.Load(src)              // parse and decode; errors carry line:col
//	x, _ := dev.Alloc(4 * n)             // fresh memory is poisoned (never written)
//	dev.Write(x, bytes)                  // host -> device
//	st, err := m.Launch("scale", sim.Config{Grid: sim.Dim3{4, 1, 1}, Block: sim.Dim3{256, 1, 1}},
//		x, uint32(n), float32(2))
//	dev.Read(x, bytes)                   // device -> host
//	fmt.Print(st)                        // counters
//
// Execution model. Each warp keeps a PC per lane and runs the lowest PC
// among its runnable lanes with the mask of lanes at that PC, so diverged
// lanes reconverge where their paths meet. Blocks run in parallel on all
// cores; a block's warps take turns, and bar.sync blocks a lane until the
// barrier's expected thread count has arrived. Memory is sequentially
// consistent, so fences and scopes need no action (only the global racecheck
// reads them); cache
// hints (.L1::evict_last, .L2::128B, prefetch) are accepted and ignored. A
// launch has no thread-block clusters: each block is a cluster of one, so
// .shared::cluster addresses the block's own shared memory.
//
// Clocks. %clock, %clock64 and %globaltimer (with %globaltimer_lo/_hi) all
// count the warp instructions the block has executed so far: they increase
// as a kernel runs, but %globaltimer is not nanoseconds and does not agree
// between blocks.
//
// Addresses. Global allocations start far above 4 GiB and are separated by
// unmapped gaps and never reused, so out-of-bounds and dangling pointers are
// caught. Shared and local memory appear in the generic space through two
// windows, which cvta and cvta.to translate.
//
// Checks (on unless Config.NoCheck): out-of-bounds and misaligned accesses
// in every space, reads of never-written global, shared and local bytes, shared
// memory races between warps within one barrier interval, barriers only part
// of a block reaches, and warp collectives (shfl, vote, match, ldmatrix, mma)
// executed by a diverged warp. Failures are *Error values naming the
// kernel, PTX line, thread and block. With checks off, bounds are still
// enforced but nothing else is tracked.
//
// Numerics. IEEE operations are bit-exact, including every rounding mode,
// .ftz, .sat, NaN and subnormals: narrow results are computed exactly or
// rounded to odd in float64 and rounded once more to the target format.
// Approximate instructions (ex2, lg2, sin, cos, rsqrt, tanh .approx) return
// the correctly rounded value, which is within the ISA's error bound.
// mma sums exact products in float64 and rounds once (the fp8 shape,
// m16n8k32 over .e4m3/.e5m2, too: hardware may accumulate more narrowly).
// The fp8 cvt forms (.e4m3x2, .e5m2x2) round to nearest even with .satfinite
// and widen exactly, as the PTX ISA defines them (fp8.go).
//
// Warp collectives. shfl.sync, vote.sync, match.sync, redux.sync and
// bar.warp.sync (__syncwarp) wait for their membermask: lanes that arrive
// early park at the instruction until the rest of the mask arrives or
// exits, as on Volta and later GPUs; bar.warp.sync lanes may meet at
// different bar.warp.sync instructions with the same mask. ldmatrix and mma
// (.aligned) need all 32 lanes. Lanes that can never meet (they wait at a
// different collective or barrier) are a synccheck error, as is a lane
// outside the membermask, and one warp reaching the same bar.sync barrier
// through two different instructions (bar.sync is barrier.sync.aligned).
//
// Racecheck compares accesses of different warps only: the lanes of one
// warp run in lockstep here, so their order is fixed. Each warp keeps a
// vector clock; a barrier joins the clocks of the warps that arrived at it
// and hands the join to those that wait there, so bar.sync with a thread
// count (a named barrier) orders only the warps that took part, and
// bar.arrive orders only the arriving warp's earlier accesses.
// Uninitialized-read tracking covers global, shared and local memory
// (parameters passed to a .func carry their state), not registers. Module
// .global and .const variables count as written (they start zeroed) and get
// host memory only when a launch or the host first uses them.
//
// Global racecheck (Config.RaceGlobal, off by default): blocks of one
// launch that read and write the same global byte with no release/acquire
// order between them (a fence and an atomic, as the split reductions'
// last-block hand-off uses) are reported with both blocks, the address and
// both PTX lines; blocks then run one at a time. globalrace.go says what it
// models and what not. Config.Order runs blocks one at a time in reverse or
// in a seeded random order, so a kernel that depends on blocks running in
// index order shows it.
//
// Dependent-launch check (with the other checks; griddep.go): a launch made
// with Config.Dependent is a programmatic dependent launch (sm_90
// griddepcontrol), which on a GPU may run until its griddepcontrol.wait
// while the launches before it still run. A thread of it that reads before
// its wait a global byte such a launch wrote, or writes one it touched, is a
// "dependent-launch race". Launches of modules without launch_dependents
// cost the check nothing.
//
// Concurrency: one launch at a time per Device; do not allocate, free or
// copy during a launch. Blocks of a launch run in parallel, so results of
// kernels that race on global memory (or add floats atomically) may vary
// between runs, as on a GPU; race-free kernels give identical bytes and
// counters whatever the number of workers.
//
// Limitations: recursion and indirect calls, textures and surfaces, wgmma,
// TMA and mbarrier, integer mma shapes, packed setp, sad, dp4a and
// dp2a are reported as unsupported at load time with the instruction's
// line. A warp in which one lane spins waiting for another
// lane of the same warp can starve under lowest-PC-first scheduling; such
// kernels stop at Config.MaxSteps with an error. A whole launch is bounded
// too (Config.MaxLaunchSteps, each block counting 32 warp instructions for
// starting): a grid too large to simulate is refused before it runs. f64 arithmetic with a
// directed rounding mode (.rz/.rm/.rp) is exact except for results in the
// f64 subnormal range.
package sim
