package collective

import (
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp/ir"
)

// TestHubClosesAfterAnswering: rank 0 closing its communicator right after its last collective
// finishes still lets the other ranks receive that collective's result (a regression: the hub
// closed their connections before writing their answers, and they saw "rank 0 is gone").
func TestHubClosesAfterAnswering(t *testing.T) {
	for i := range 50 {
		w := tcpWorld(t, 3, Options{Timeout: 5 * time.Second})
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for r := range 3 {
			p := put(t, w.mems[r], ir.F32, []float64{float64(r)})
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := w.comms[r]
				if errs[r] = c.AllReduce(p, p, 1, ir.F32, Sum, 0); errs[r] == nil {
					errs[r] = c.Wait()
				}
				if r == 0 {
					c.Close() // at once, as a trainer's rank 0 does after its last step
				}
			}()
		}
		wg.Wait()
		for r, err := range errs {
			if err != nil {
				t.Fatalf("round %d: rank %d: %v", i, r, err)
			}
		}
		for _, c := range w.comms[1:] {
			c.Close()
		}
	}
}
