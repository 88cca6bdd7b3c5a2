package collective

import (
	"fmt"
	"testing"
	"time"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
)

// BenchmarkAllReduce measures the simulated all-reduce of one 4 MiB f32
// bucket on simulated devices, in process and over loopback TCP (docs/perf.md):
//
//	go test ./runtime/collective -run '^$' -bench AllReduce -benchtime 20x
func BenchmarkAllReduce(b *testing.B) {
	const count = 1 << 20
	for _, transport := range []string{"local", "tcp"} {
		for _, ranks := range []int{2, 4} {
			b.Run(fmt.Sprintf("%s/%d", transport, ranks), func(b *testing.B) {
				mk := localWorld
				if transport == "tcp" {
					mk = tcpWorld
				}
				w := mk(b, ranks, Options{Timeout: time.Minute})
				defer w.close(b)
				ptrs := make([]executor.Ptr, ranks)
				for r := range ptrs {
					ptrs[r] = put(b, w.mems[r], ir.F32, make([]float64, count))
				}
				b.SetBytes(4 * count)
				b.ResetTimer()
				for b.Loop() {
					for r, c := range w.comms {
						if err := c.AllReduce(ptrs[r], ptrs[r], count, ir.F32, Avg, 0); err != nil {
							b.Fatal(err)
						}
					}
					for _, c := range w.comms {
						if err := c.Wait(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}
