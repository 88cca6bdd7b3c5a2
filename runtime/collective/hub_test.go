package collective

import (
	"strings"
	"testing"
	"time"

	"github.com/gcomp/gcomp/ir"
)

// TestHubLateArrival is the regression test for a rank arriving at a
// collective that already failed: it wrote its bytes into the finished
// round (a panic) when the round was still there, and waited out the
// timeout when it was not. Both orders must give the failure at once.
func TestHubLateArrival(t *testing.T) {
	c := call{Kind: allReduce, DType: ir.F32, Count: 1}
	for i := range 200 {
		h := newHub(2, time.Minute)
		errs := make(chan error, 1)
		go func() {
			_, err := h.exchange(1, 1, c, make([]byte, 4))
			errs <- err
		}()
		for {
			h.mu.Lock()
			n := len(h.rounds)
			h.mu.Unlock()
			if n == 1 {
				break
			}
			time.Sleep(time.Microsecond)
		}
		h.leave(1, "aborted its communicator")
		if i%2 == 0 {
			<-errs // rank 1 has fetched: the round is gone
		}
		start := time.Now()
		_, err := h.exchange(1, 0, c, make([]byte, 4))
		if err == nil || !strings.Contains(err.Error(), "rank 1 aborted its communicator") {
			t.Fatalf("late rank 0: %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("late rank 0 waited %v", d)
		}
	}
}
