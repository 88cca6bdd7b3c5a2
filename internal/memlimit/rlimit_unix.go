//go:build linux || darwin

package memlimit

import "golang.org/x/sys/unix"

// addressSpaceLimit is the soft RLIMIT_AS in bytes, 0 when unlimited or unknown.
func addressSpaceLimit() int64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur >= 1<<62 {
		return 0
	}
	return int64(rl.Cur)
}
