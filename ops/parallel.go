package ops

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallel runs task(0) ... task(n-1) on up to GOMAXPROCS goroutines. The tasks are fixed by the
// caller, independently of the number of threads, and each writes its own part of the result with
// a fixed order of arithmetic, so the result is bit-identical whatever GOMAXPROCS is.
func parallel(n int, task func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			task(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				task(i)
			}
		}()
	}
	wg.Wait()
}

// chunks splits [0, n) into pieces of size grain and runs f on each in parallel.
func chunks(n, grain int, f func(lo, hi int)) {
	parallel((n+grain-1)/grain, func(i int) { f(i*grain, min(n, (i+1)*grain)) })
}
