package load

import (
	"context"
	"fmt"
	"runtime/metrics"
	"time"

	"github.com/traefik/yaegi/interp"
)

// DefaultTimeout bounds the time a model file may take to build its graph (its package-level
// initialization and its entry function together), so that `for {}` or a receive from a channel
// nobody sends on ends with a message instead of a hang.
const DefaultTimeout = 10 * time.Second

// DefaultMemory bounds the heap a model file's code may grow while it builds its graph.
const DefaultMemory = 4 << 30

// limitError says which limit the model code crossed.
func limitError(filename string, opt Options, over bool) error {
	if over {
		return fmt.Errorf("%s: the model code allocated more than %d bytes while building its graph (see --load-memory)", filename, opt.Memory)
	}
	return fmt.Errorf("%s: building the graph took longer than %v (an endless loop, or a receive nobody sends to?); see --load-timeout", filename, opt.Timeout)
}

// stopInterpreter makes every frame the interpreter is running return: the interpreter checks a
// run id at each step, which a cancelled evaluation advances. A receive blocked in model code
// stays blocked (in a goroutine that costs nothing); a spinning loop stops.
func stopInterpreter(i *interp.Interpreter) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	i.EvalWithContext(ctx, "select {}")
}

// heapBytes is the bytes of live and unswept heap objects.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// watchMemory reports on the returned channel when the heap has grown by more than limit bytes
// since the call, checking every few milliseconds until stop is closed.
func watchMemory(limit int64, stop <-chan struct{}) <-chan struct{} {
	over := make(chan struct{})
	base := heapBytes()
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if heapBytes()-base > limit {
					close(over)
					return
				}
			}
		}
	}()
	return over
}

// Size checks a make's length or capacity against the memory limit before the interpreter
// allocates it, so that one huge make([]T, n) is refused instead of killing the process.
func (t *tracer) Size(n int, elem int) int {
	if n > 0 && elem > 0 && int64(n) > t.maxBytes/int64(elem) {
		panic(fmt.Sprintf("make of %d elements of %d bytes exceeds the model code's memory limit of %d bytes (see --load-memory)", n, elem, t.maxBytes))
	}
	return n
}
