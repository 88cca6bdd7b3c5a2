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
// consistent, so fences and scopes are accepted and need no action.
//
// Addresses. Global allocations start far above 4 GiB and are separated by
// unmapped gaps and never reused, so out-of-bounds and dangling pointers are
// caught. Shared and local memory appear in the generic space through two
// windows, which cvta and cvta.to translate.
//
// Checks (on unless Config.NoCheck): out-of-bounds and misaligned accesses
// in every space, reads of never-written global and shared bytes, shared
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
// mma sums exact products in float64 and rounds once.
//
// Limitations: recursion and indirect calls, textures and surfaces, wgmma
// and TMA, packed setp and a few rare modes of prmt are reported as
// unsupported at load time with the instruction's line.
package sim
