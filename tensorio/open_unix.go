//go:build unix

package tensorio

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// FIFOWait is how long OpenRead waits for a writer to open a named pipe before it gives up.
var FIFOWait = 10 * time.Second

// openNoBlock opens path read-only. Opening a named pipe for reading blocks until a writer opens
// it, which may never happen: the open runs aside, and if no writer came within FIFOWait, opening
// the pipe for writing ourselves releases it, and the pipe is refused.
func openNoBlock(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		done <- opened{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-time.After(FIFOWait):
	}
	if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		defer w.Close()
	}
	if r := <-done; r.f != nil {
		r.f.Close()
	}
	return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("a named pipe that no writer opened within %s", FIFOWait)}
}
