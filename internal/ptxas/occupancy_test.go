package ptxas

import "testing"

// The limits of CUDA's occupancy calculator: warp slots, block slots, registers in units of 256
// per warp, shared memory with 1 KB reserved per block.
func TestResidentWarps(t *testing.T) {
	for _, tc := range []struct {
		arch                  string
		regs, shared, threads int
		want                  int
	}{
		{"sm_80", 32, 0, 256, 64},        // warp slots
		{"sm_80", 32, 0, 32, 32},         // 32 block slots of one warp
		{"sm_86", 32, 0, 32, 16},         // 16 block slots
		{"sm_80", 64, 0, 256, 32},        // 65536/(64·32) = 32 warps: 4 blocks of 8
		{"sm_80", 33, 0, 256, 48},        // 33 regs round to 40 per thread: 51 warps, 6 blocks of 8
		{"sm_80", 16, 40 << 10, 256, 32}, // 164 KB / 41 KB: 4 blocks
		{"sm_90", 16, 40 << 10, 256, 40}, // 228 KB / 41 KB: 5 blocks
		{"sm_89", 255, 0, 1024, 0},       // no block of 1024 threads at 255 registers fits
		{"sm_80", 32, 0, 0, 0},
	} {
		if got := ResidentWarps(tc.arch, tc.regs, tc.shared, tc.threads); got != tc.want {
			t.Errorf("ResidentWarps(%s, %d regs, %d B, %d threads) = %d, want %d", tc.arch, tc.regs, tc.shared, tc.threads, got, tc.want)
		}
	}
}
