package memlimit

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// physicalMemory is the machine's physical memory in bytes, 0 if it cannot be read.
func physicalMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// addressSpaceLimit is the soft RLIMIT_AS in bytes, 0 when unlimited or unknown.
func addressSpaceLimit() int64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur >= 1<<62 {
		return 0
	}
	return int64(rl.Cur)
}
