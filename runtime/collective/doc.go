// Package collective is the collective-communication interface data-parallel
// training stands on: AllReduce (sum, avg), Broadcast, AllGather and
// ReduceScatter over device buffers, groups, asynchronous errors, abort.
//
// Two implementations:
//
//   - FromNCCL adapts an NCCL communicator (runtime/nccl): the engine on
//     GPUs, where the calls are queued on CUDA streams and run on the GPUs'
//     links.
//   - The simulated implementation, for simulated devices: NewLocal for the
//     ranks of one process (a goroutine per rank, meeting in memory) and
//     ServeTCP/DialTCP for ranks in several processes (rank 0 computes,
//     the others send it their buffers over one TCP connection each). It is
//     a test double for rehearsing data parallelism without GPUs, never the
//     engine on them.
//
// Stream order: on plain simulated memory (a simdev device) the simulated
// calls run in issue order on the rank's own goroutine, whatever their
// stream. A rank whose memory is a StreamDevice (the CUDA device over the
// simulator-backed driver) has its calls on a non-zero stream queued there
// as host functions: a call runs when the stream reaches it, after the
// kernels before it and the events the stream waits for, and the work after
// it on the stream waits for its result, as with NCCL. A missing wait between
// a kernel and a collective then gives wrong numbers under some schedule of
// the simulator-backed driver, as it may on GPUs. One goroutine per rank
// synchronizes that rank's device, which runs its calls:
//
//	drv := simdriver.New()
//	dev, _ := cuda.Open(drv, 0, cuda.Options{})
//	comm, _ := dev.NewStream()
//	// NewLocal with collective.OnCUDA(dev, drv.Memory()) for each rank's
//	// device; then, on rank r's goroutine:
//	grads, _ := dev.Record()                  // after the backward kernels
//	dev.WaitOn(comm, grads)
//	c.AllReduce(g, g, n, ir.F32, collective.Avg, collective.Stream(comm))
//	done, _ := dev.RecordOn(comm)
//	dev.Wait(done)                            // the optimizer's kernels follow
//	dev.Sync()                                // runs the streams, and the all-reduce
//	err := c.Wait()
//
// The simulated results follow NCCL's semantics, and reductions add in a
// documented ring order (compute's comment): every rank gets bit-identical
// results, equal to a serial reduction within the reduction-order tolerance.
// Real NCCL also splits buffers across channels and pipelines slices, so its
// bits can differ from the simulation's; both agree within that tolerance.
//
// Failures never hang: a collective some rank does not join within
// Options.Timeout fails on every rank naming the missing ones, and a rank
// that closes, aborts or loses its connection makes the others' current and
// later collectives fail naming it.
//
//	comms, _ := collective.NewLocal([]collective.Memory{dev0, dev1}, collective.Options{})
//	for r, c := range comms { // or one goroutine per rank
//		c.AllReduce(grad[r], grad[r], n, ir.F32, collective.Avg, 0)
//	}
//	for _, c := range comms {
//		if err := c.Wait(); err != nil { ... }
//	}
package collective
