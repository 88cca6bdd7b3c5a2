//go:build !unix

package tensorio

import "os"

// openNoBlock is os.Open where named pipes do not block an open the way Unix FIFOs do.
func openNoBlock(path string) (*os.File, error) { return os.Open(path) }
