//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package tensorio

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only. An empty file has nothing to map.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("the file is %d bytes, too large to map", size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the file: %v", err)
	}
	return b, nil
}

func unmapFile(b []byte) error { return syscall.Munmap(b) }
