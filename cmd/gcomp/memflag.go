package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/internal/memlimit"
)

// byteSize is a flag holding a number of bytes, written as 1000000, 512MiB, 8GiB or 1TiB.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return fmt.Errorf("want a positive number of bytes such as 1000000, 512MiB or 8GiB, have %q", s)
	}
	*b = byteSize(n * mult)
	return nil
}

// defaultRefMemory is the reference interpreter's default memory budget: half the tightest of
// the physical memory, the address-space limit (ulimit -v) and the cgroup's memory limit (a
// container's), so that a model too large for what the process may use fails with a clear error
// instead of the out-of-memory killer.
func defaultRefMemory() byteSize { return byteSize(memlimit.Default()) }
