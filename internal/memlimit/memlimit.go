package memlimit

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Unknown is what Limit reports when no limit can be read (1 TiB each for Default's half).
const Unknown = 2 << 40

// Limit is the tightest of the physical memory, RLIMIT_AS and the cgroup memory limit, in bytes;
// Unknown when none of them can be read.
func Limit() int64 {
	return tightest(physicalMemory(), addressSpaceLimit(), cgroupLimit("/proc/self/cgroup", "/sys/fs/cgroup"))
}

// Default is the default budget of a memory-bounded reader or interpreter: half of Limit, which
// leaves the other half to the rest of the process and to the Go collector's headroom.
func Default() int64 { return Limit() / 2 }

// tightest is the smallest positive limit, Unknown when none is.
func tightest(limits ...int64) int64 {
	min := int64(Unknown)
	for _, n := range limits {
		if n > 0 && n < min {
			min = n
		}
	}
	return min
}

// cgroupLimit is the memory limit of this process's control group and of its ancestors (the
// tightest), read under root (normally /sys/fs/cgroup) for the groups that procCgroup
// (/proc/self/cgroup) names; 0 when there is none. A limit of "max" (v2) or a number of 2^62 or
// more (v1's unlimited, rounded to the page) is no limit.
func cgroupLimit(procCgroup, root string) int64 {
	f, err := os.Open(procCgroup)
	if err != nil {
		return 0
	}
	defer f.Close()
	var limits []int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path; v2's unified line is "0::/path".
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			limits = append(limits, walkUp(filepath.Join(root), parts[2], "memory.max"))
		case hasController(parts[1], "memory"):
			limits = append(limits, walkUp(filepath.Join(root, "memory"), parts[2], "memory.limit_in_bytes"))
		}
	}
	if len(limits) == 0 {
		return 0
	}
	if n := tightest(limits...); n < Unknown {
		return n
	}
	return 0
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// walkUp reads file in the group's folder under mount and in each ancestor's up to mount (a
// container sees its own group as the mount's root), returning the tightest limit found.
func walkUp(mount, group, file string) int64 {
	group = filepath.Clean("/" + group)
	best := int64(0)
	for {
		if n := readLimit(filepath.Join(mount, group, file)); n > 0 && (best == 0 || n < best) {
			best = n
		}
		if group == "/" {
			return best
		}
		group = filepath.Dir(group)
	}
}

// readLimit reads one limit file: a number of bytes, or "max"; 0 for none.
func readLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 64 {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}
