package ptxas

// ResidentWarps is how many warps of a kernel one SM of arch holds at once, from what ptxas
// reports (registers per thread, static shared memory) and the launch (dynamic shared memory,
// threads per block): blocks limited by the registers (allocated per warp in units of 256 of the
// SM's 64K), the shared memory (1 KB reserved per block), the warp and the block slots of the
// architecture, as CUDA's occupancy calculator counts them.
func ResidentWarps(arch string, regs, shared, threads int) int {
	maxWarps, maxBlocks, smem := 64, 32, 164<<10
	switch arch {
	case "sm_86":
		maxWarps, maxBlocks, smem = 48, 16, 100<<10
	case "sm_89":
		maxWarps, maxBlocks, smem = 48, 24, 100<<10
	case "sm_90":
		smem = 228 << 10
	}
	if threads <= 0 {
		return 0
	}
	warps := (threads + 31) / 32
	blocks := min(maxBlocks, maxWarps/warps)
	if regs > 0 {
		perWarp := (regs*32 + 255) / 256 * 256
		blocks = min(blocks, (65536/perWarp)/warps)
	}
	if shared > 0 {
		blocks = min(blocks, smem/(shared+1024))
	}
	return blocks * warps
}

// MaxWarps is the most warps one SM of arch holds.
func MaxWarps(arch string) int {
	if arch == "sm_86" || arch == "sm_89" {
		return 48
	}
	return 64
}
