package passes

import (
	"errors"
	"fmt"
	"io"
)

// The communication cost of data parallelism: what each rank sends per training step when the
// gradients are averaged with a ring all-reduce, how long that takes on three interconnects, and
// how much of it hides behind the backward pass when the gradients are all-reduced in buckets as
// PyTorch's DistributedDataParallel does.
//
// A ring all-reduce of B bytes over N ranks is a reduce-scatter and an all-gather of N−1 steps
// each; every step moves B/N bytes per rank, so each rank sends 2(N−1)/N × B bytes, at the link's
// one-way bandwidth, and pays the link's latency once per step.
//
// Buckets: the gradients fill buckets in reverse parameter order (the order backward produces
// them), each closed once it holds BucketBytes (DDP's bucket_cap_mb, 25 MiB; DDP's first bucket
// is capped at 1 MiB so communication starts early). The model lets backward produce gradient
// bytes at a constant rate over BackwardUS, so a bucket is ready when backward has produced its
// bytes; one communication stream all-reduces the buckets in order, each as soon as it is ready
// and the previous one is done. What runs past the end of backward is exposed: it adds to the
// step (the optimizer waits for the last bucket).

// CommLink is an interconnect the ranks all-reduce over.
type CommLink struct {
	Name        string
	BytesPerSec float64 // one way, per GPU
	HopUS       float64 // latency of one ring step
}

// CommLinks are the interconnects the report models. NVLink 4 is 900 GB/s per H100 counting both
// directions, so 450 GB/s each way; PCIe 5 x16 and 400 Gb/s InfiniBand (NDR) are 64 and 50 GB/s
// each way. The step latencies are assumptions in the range of NCCL's own tuning tables for the
// ring (src/graph/tuning.cc: under a microsecond to a few per NVLink or PCIe hop, more over the
// network, depending on the protocol).
var CommLinks = []CommLink{
	{Name: "NVLink 4 (900 GB/s)", BytesPerSec: 450e9, HopUS: 1},
	{Name: "PCIe 5 x16 (64 GB/s)", BytesPerSec: 64e9, HopUS: 2},
	{Name: "InfiniBand 400 Gb/s", BytesPerSec: 50e9, HopUS: 5},
}

// DDP's bucket caps.
const (
	DefaultBucketBytes = 25 << 20
	FirstBucketBytes   = 1 << 20
)

// Grad is one parameter's gradient.
type Grad struct {
	Name  string
	Bytes int64
}

// CommInput describes one data-parallel training step.
type CommInput struct {
	Ranks int
	// Grads are the gradients in parameter order.
	Grads []Grad
	// ComputeUS is the step's modeled compute time (Stats.ModeledTimeUS of the step).
	ComputeUS float64
	// BackwardUS is the part of it that produces gradients; 0 means two thirds of ComputeUS
	// (backward does about twice the forward's work).
	BackwardUS float64
	// BucketBytes caps a bucket; 0 means DefaultBucketBytes.
	BucketBytes int64
}

// CommBucket is a bucket of gradients, all-reduced together.
type CommBucket struct {
	Params  []string
	Bytes   int64
	ReadyUS float64 // when backward has produced it, from the start of backward
}

// CommReport is the communication cost of a step.
type CommReport struct {
	Ranks         int
	GradientBytes int64
	// SentBytes is what each rank sends per step: 2(N−1)/N × GradientBytes.
	SentBytes  int64
	ComputeUS  float64
	BackwardUS float64
	Buckets    []CommBucket
	Links      []CommLinkCost
}

// CommLinkCost is the step's communication on one interconnect.
type CommLinkCost struct {
	Link string
	// CommUS is the all-reduces' time together, ExposedUS the part after backward, StepUS the
	// step with it (ComputeUS + ExposedUS).
	CommUS, ExposedUS, StepUS float64
	// Hidden: every bucket but the last is all-reduced before backward ends, so only the last
	// bucket's all-reduce (whose gradients backward produces last) adds to the step. A step
	// with one bucket has nothing to overlap and is never hidden.
	Hidden bool
}

// CommCost models in's communication.
func CommCost(in CommInput) (*CommReport, error) {
	if in.Ranks < 1 {
		return nil, fmt.Errorf("commcost: %d ranks", in.Ranks)
	}
	if in.ComputeUS < 0 || in.BackwardUS < 0 || in.BucketBytes < 0 {
		return nil, errors.New("commcost: negative time or bucket size")
	}
	r := &CommReport{Ranks: in.Ranks, ComputeUS: in.ComputeUS, BackwardUS: in.BackwardUS}
	if r.BackwardUS == 0 {
		r.BackwardUS = in.ComputeUS * 2 / 3
	}
	for _, g := range in.Grads {
		if g.Bytes < 0 {
			return nil, fmt.Errorf("commcost: gradient %s has %d bytes", g.Name, g.Bytes)
		}
		r.GradientBytes += g.Bytes
	}
	n := int64(in.Ranks)
	r.SentBytes = 2 * (n - 1) * r.GradientBytes / n
	r.Buckets = buckets(in.Grads, in.BucketBytes, r.GradientBytes, r.BackwardUS)
	for _, l := range CommLinks {
		r.Links = append(r.Links, r.linkCost(l))
	}
	return r, nil
}

// buckets fills buckets in reverse parameter order and times when each is ready.
func buckets(grads []Grad, capBytes, total int64, backwardUS float64) []CommBucket {
	if capBytes == 0 {
		capBytes = DefaultBucketBytes
	}
	limit := min(FirstBucketBytes, capBytes)
	var out []CommBucket
	var cur CommBucket
	var done int64
	for i := len(grads) - 1; i >= 0; i-- {
		g := grads[i]
		cur.Params = append(cur.Params, g.Name)
		cur.Bytes += g.Bytes
		done += g.Bytes
		if cur.Bytes >= limit || i == 0 {
			if total > 0 {
				cur.ReadyUS = backwardUS * float64(done) / float64(total)
			}
			out = append(out, cur)
			cur, limit = CommBucket{}, capBytes
		}
	}
	return out
}

// allReduceUS is a ring all-reduce of b bytes over n ranks on l.
func allReduceUS(b int64, n int, l CommLink) float64 {
	if n == 1 {
		return 0
	}
	steps := float64(2 * (n - 1))
	return steps/float64(n)*float64(b)/l.BytesPerSec*1e6 + steps*l.HopUS
}

func (r *CommReport) linkCost(l CommLink) CommLinkCost {
	c := CommLinkCost{Link: l.Name}
	var end, beforeLast float64
	for i, b := range r.Buckets {
		if i == len(r.Buckets)-1 {
			beforeLast = end
		}
		t := allReduceUS(b.Bytes, r.Ranks, l)
		c.CommUS += t
		end = max(end, b.ReadyUS) + t
	}
	if r.Ranks > 1 && len(r.Buckets) > 0 {
		c.ExposedUS = max(0, end-r.BackwardUS)
		c.Hidden = len(r.Buckets) > 1 && beforeLast <= r.BackwardUS
	}
	c.StepUS = r.ComputeUS + c.ExposedUS
	return c
}

// WriteTable prints the report: one line per interconnect.
func (r *CommReport) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%d ranks: %d gradient bytes in %d buckets, each rank sends %d bytes per step (ring all-reduce); compute %.1f µs, backward %.1f µs (modeled)\n",
		r.Ranks, r.GradientBytes, len(r.Buckets), r.SentBytes, r.ComputeUS, r.BackwardUS)
	for _, l := range r.Links {
		hidden := "no"
		if l.Hidden {
			hidden = "yes"
		}
		fmt.Fprintf(w, "  %-22s all-reduce %10.1f µs  exposed %10.1f µs  step %10.1f µs  hidden behind backward: %s\n",
			l.Link, l.CommUS, l.ExposedUS, l.StepUS, hidden)
	}
}
