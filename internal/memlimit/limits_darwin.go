package memlimit

import "golang.org/x/sys/unix"

// physicalMemory is the machine's physical memory in bytes, 0 if it cannot be read.
func physicalMemory() int64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0
	}
	return int64(n)
}

// addressSpaceLimit is the soft RLIMIT_AS in bytes, 0 when unlimited or unknown.
func addressSpaceLimit() int64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur >= 1<<62 {
		return 0
	}
	return int64(rl.Cur)
}
