//go:build !linux && !darwin

package memlimit

// physicalMemory and addressSpaceLimit are 0 (unknown) where gcomp does not read them; a cgroup
// limit is read on Linux only (its files do not exist elsewhere).
func physicalMemory() int64    { return 0 }
func addressSpaceLimit() int64 { return 0 }
