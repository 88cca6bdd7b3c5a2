package sim

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
)

// DefaultMemoryLimit is a new device's memory limit: half the host's
// physical memory, at most 8 GiB (8 GiB where the host's memory is
// unknown). Simulated memory is host memory, plus a byte per byte to track
// what was written, so a larger device would push the host into swap.
func DefaultMemoryLimit() int64 {
	const ceiling = 8 << 30
	if p := physicalMemory(); p > 0 {
		return min(p/2, ceiling)
	}
	return ceiling
}

var physicalMemory = sync.OnceValue(func() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// MemTotal:       24683656 kB
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil || kb <= 0 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
})
