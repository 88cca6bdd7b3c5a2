package collective

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// world is a set of ranks on simulated devices.
type world struct {
	comms []Comm
	mems  []Memory
}

func simMems(n int) []Memory {
	mems := make([]Memory, n)
	for i := range mems {
		mems[i] = simdev.New(simdev.Options{})
	}
	return mems
}

func localWorld(t testing.TB, n int, opt Options) *world {
	t.Helper()
	mems := simMems(n)
	comms, err := NewLocal(mems, opt)
	if err != nil {
		t.Fatal(err)
	}
	return &world{comms, mems}
}

// tcpWorld serves rank 0 on a loopback port and dials the others, each from
// its own goroutine as separate processes would.
func tcpWorld(t testing.TB, n int, opt Options) *world {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mems := simMems(n)
	comms := make([]Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r == 0 {
				comms[0], errs[0] = ServeTCP(ln, n, mems[0], opt)
			} else {
				comms[r], errs[r] = DialTCP(ln.Addr().String(), r, n, mems[r], opt)
			}
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return &world{comms, mems}
}

func (w *world) close(t testing.TB) {
	for _, c := range w.comms {
		c.Close()
	}
}

// encode and decode move values of dt to and from little-endian bytes.
func encode(dt ir.DType, vals []float64) []byte {
	b := make([]byte, len(vals)*dt.Size())
	for i, v := range vals {
		switch dt {
		case ir.F32:
			le.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		case ir.F64:
			le.PutUint64(b[8*i:], math.Float64bits(v))
		case ir.F16:
			le.PutUint16(b[2*i:], tensor.FloatToF16(v))
		case ir.BF16:
			le.PutUint16(b[2*i:], tensor.FloatToBF16(v))
		case ir.I32:
			le.PutUint32(b[4*i:], uint32(int32(v)))
		case ir.I64:
			le.PutUint64(b[8*i:], uint64(int64(v)))
		case ir.I8, ir.U8:
			b[i] = byte(int(v))
		}
	}
	return b
}

func decode(dt ir.DType, b []byte) []float64 {
	vals := make([]float64, len(b)/dt.Size())
	for i := range vals {
		switch dt {
		case ir.F32:
			vals[i] = float64(math.Float32frombits(le.Uint32(b[4*i:])))
		case ir.F64:
			vals[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		case ir.F16:
			vals[i] = tensor.F16ToFloat(le.Uint16(b[2*i:]))
		case ir.BF16:
			vals[i] = tensor.BF16ToFloat(le.Uint16(b[2*i:]))
		case ir.I32:
			vals[i] = float64(int32(le.Uint32(b[4*i:])))
		case ir.I64:
			vals[i] = float64(int64(le.Uint64(b[8*i:])))
		case ir.I8:
			vals[i] = float64(int8(b[i]))
		case ir.U8:
			vals[i] = float64(b[i])
		}
	}
	return vals
}

// put allocates a buffer on m holding vals (at least one byte).
func put(t testing.TB, m Memory, dt ir.DType, vals []float64) executor.Ptr {
	t.Helper()
	b := encode(dt, vals)
	p, err := m.(executor.Device).Alloc(int64(max(len(b), 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Write(p, b); err != nil {
		t.Fatal(err)
	}
	return p
}

func get(t *testing.T, m Memory, p executor.Ptr, dt ir.DType, n int) []byte {
	t.Helper()
	b := make([]byte, n*dt.Size())
	if err := m.Read(b, p); err != nil {
		t.Fatal(err)
	}
	return b
}

// inputs are n values per rank, representable in dt, small enough that no
// integer sum wraps.
func inputs(rng *rand.Rand, dt ir.DType, ranks, n int) [][]float64 {
	in := make([][]float64, ranks)
	for r := range in {
		in[r] = make([]float64, n)
		for i := range in[r] {
			switch {
			case dt.IsFloat():
				in[r][i] = decode(dt, encode(dt, []float64{rng.NormFloat64() * 4}))[0]
			case dt == ir.U8:
				in[r][i] = float64(rng.IntN(30))
			default:
				in[r][i] = float64(rng.IntN(61) - 30)
			}
		}
	}
	return in
}

// eps is the unit roundoff of dt's arithmetic (0: exact).
func eps(dt ir.DType) float64 {
	return map[ir.DType]float64{ir.F32: 0x1p-24, ir.F64: 0x1p-53, ir.F16: 0x1p-11, ir.BF16: 0x1p-8}[dt]
}

// serial is the exact (float64) reduction of in, element i over ranks in rank
// order, and the bound on a floating-point reduction's error in any order.
func serial(in [][]float64, op Op, dt ir.DType, i int) (want, tol float64) {
	var abs float64
	for r := range in {
		want += in[r][i]
		abs += math.Abs(in[r][i])
	}
	n := float64(len(in))
	if op == Avg {
		if dt.IsFloat() {
			want /= n
		} else {
			want = math.Trunc(want / n)
		}
		abs /= n
	}
	return want, (n+1)*eps(dt)*abs + eps(dt)*math.Abs(want)
}

// TestReductionsMatchSerial: AllReduce and ReduceScatter of every type, both
// reductions, 1 to 4 ranks and counts that do and do not divide, in process
// and over TCP, equal the serial reduction within the reduction-order
// tolerance (integers exactly), and every rank's result is the same bits.
func TestReductionsMatchSerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, transport := range []string{"local", "tcp"} {
		for _, ranks := range []int{1, 2, 3, 4} {
			if transport == "tcp" && ranks == 1 {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", transport, ranks), func(t *testing.T) {
				w := localWorld
				if transport == "tcp" {
					w = tcpWorld
				}
				world := w(t, ranks, Options{Timeout: 20 * time.Second})
				defer world.close(t)
				for _, dt := range DTypes {
					for _, op := range []Op{Sum, Avg} {
						for _, count := range []int{0, 1, 7, 64} {
							checkAllReduce(t, world, rng, dt, op, count)
							checkReduceScatter(t, world, rng, dt, op, count)
						}
					}
				}
			})
		}
	}
}

func checkAllReduce(t *testing.T, w *world, rng *rand.Rand, dt ir.DType, op Op, count int) {
	t.Helper()
	in := inputs(rng, dt, len(w.comms), count)
	ptrs := make([]executor.Ptr, len(w.comms))
	for r, c := range w.comms {
		ptrs[r] = put(t, w.mems[r], dt, in[r])
		if err := c.AllReduce(ptrs[r], ptrs[r], count, dt, op, 0); err != nil {
			t.Fatal(err)
		}
	}
	var first []byte
	for r, c := range w.comms {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		got := get(t, w.mems[r], ptrs[r], dt, count)
		if r == 0 {
			first = got
		} else if string(got) != string(first) {
			t.Errorf("allreduce %s %v count %d: rank %d's bits differ from rank 0's", dt, op, count, r)
		}
	}
	for i, g := range decode(dt, first) {
		if want, tol := serial(in, op, dt, i); math.Abs(g-want) > tol {
			t.Errorf("allreduce %s %v count %d [%d] = %v, serial %v (tolerance %g)", dt, op, count, i, g, want, tol)
		}
	}
}

func checkReduceScatter(t *testing.T, w *world, rng *rand.Rand, dt ir.DType, op Op, count int) {
	t.Helper()
	n := len(w.comms)
	in := inputs(rng, dt, n, n*count)
	recv := make([]executor.Ptr, n)
	for r, c := range w.comms {
		send := put(t, w.mems[r], dt, in[r])
		recv[r] = put(t, w.mems[r], dt, make([]float64, count))
		if err := c.ReduceScatter(send, recv[r], count, dt, op, 0); err != nil {
			t.Fatal(err)
		}
	}
	for r, c := range w.comms {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		for i, g := range decode(dt, get(t, w.mems[r], recv[r], dt, count)) {
			if want, tol := serial(in, op, dt, r*count+i); math.Abs(g-want) > tol {
				t.Errorf("reducescatter %s %v: rank %d [%d] = %v, serial %v", dt, op, r, i, g, want)
			}
		}
	}
}

// TestRingOrder pins the documented order: with 3 ranks the single element is
// chunk 0, summed from rank 1 around to rank 0: (1e8 + −1e8) + 1 = 1 in f32,
// where the serial order's (1 + 1e8) − 1e8 loses the 1.
func TestRingOrder(t *testing.T) {
	w := localWorld(t, 3, Options{})
	defer w.close(t)
	in := []float64{1, 1e8, -1e8}
	ptrs := make([]executor.Ptr, 3)
	for r, c := range w.comms {
		ptrs[r] = put(t, w.mems[r], ir.F32, in[r:r+1])
		if err := c.AllReduce(ptrs[r], ptrs[r], 1, ir.F32, Sum, 0); err != nil {
			t.Fatal(err)
		}
	}
	for r, c := range w.comms {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		if got := decode(ir.F32, get(t, w.mems[r], ptrs[r], ir.F32, 1))[0]; got != 1 {
			t.Errorf("rank %d: %v, want 1 (the ring's order)", r, got)
		}
	}
}

// TestCopies: Broadcast from each root and AllGather move every type's bits
// unchanged, with one goroutine per rank.
func TestCopies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w := localWorld(t, 3, Options{Timeout: 10 * time.Second})
	defer w.close(t)
	for _, dt := range DTypes {
		in := inputs(rng, dt, 3, 5)
		for root := range 3 {
			got := perRank(t, w, func(r int, c Comm) []byte {
				send := put(t, w.mems[r], dt, in[r])
				recv := put(t, w.mems[r], dt, make([]float64, 5))
				check(t, c.Broadcast(send, recv, 5, dt, root, 0))
				check(t, c.Wait())
				return get(t, w.mems[r], recv, dt, 5)
			})
			for r := range got {
				if string(got[r]) != string(encode(dt, in[root])) {
					t.Errorf("broadcast %s from %d: rank %d got %v", dt, root, r, decode(dt, got[r]))
				}
			}
		}
		got := perRank(t, w, func(r int, c Comm) []byte {
			send := put(t, w.mems[r], dt, in[r])
			recv := put(t, w.mems[r], dt, make([]float64, 15))
			check(t, c.AllGather(send, recv, 5, dt, 0))
			check(t, c.Wait())
			return get(t, w.mems[r], recv, dt, 15)
		})
		want := string(encode(dt, append(append(append([]float64(nil), in[0]...), in[1]...), in[2]...)))
		for r := range got {
			if string(got[r]) != want {
				t.Errorf("allgather %s: rank %d got %v", dt, r, decode(dt, got[r]))
			}
		}
	}
}

// perRank runs f for every rank, each on its own goroutine.
func perRank(t *testing.T, w *world, f func(r int, c Comm) []byte) [][]byte {
	out := make([][]byte, len(w.comms))
	var wg sync.WaitGroup
	for r, c := range w.comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[r] = f(r, c)
		}()
	}
	wg.Wait()
	return out
}

func TestBadArguments(t *testing.T) {
	w := localWorld(t, 2, Options{})
	defer w.close(t)
	c := w.comms[0]
	for _, tc := range []struct {
		err  error
		want string
	}{
		{c.AllReduce(0, 0, -1, ir.F32, Sum, 0), "allreduce: negative count -1"},
		{c.AllReduce(0, 0, 1, ir.Bool, Sum, 0), "allreduce: element type bool is not one the collectives move"},
		{c.ReduceScatter(0, 0, 1, ir.F32, Op(9), 0), "reducescatter: unknown reduction Op(9)"},
		{c.Broadcast(0, 0, 1, ir.F32, 2, 0), "broadcast: root 2 is not a rank of 2"},
		{c.GroupEnd(), "rank 0: GroupEnd without GroupStart"},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.want) {
			t.Errorf("got %v, want %q", tc.err, tc.want)
		}
	}
	check(t, c.GroupStart())
	check(t, c.GroupStart())
	check(t, c.GroupEnd())
	check(t, c.GroupEnd())
	if err := c.Wait(); err != nil {
		t.Errorf("bad arguments left an asynchronous error: %v", err)
	}
}

// TestMismatch: ranks that disagree on a call's count or type all fail with
// an error naming both calls, and their communicators stay failed.
func TestMismatch(t *testing.T) {
	for _, transport := range []string{"local", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			mk := localWorld
			if transport == "tcp" {
				mk = tcpWorld
			}
			w := mk(t, 2, Options{Timeout: 10 * time.Second})
			defer w.close(t)
			p0 := put(t, w.mems[0], ir.F32, make([]float64, 5))
			p1 := put(t, w.mems[1], ir.F32, make([]float64, 5))
			check(t, w.comms[0].AllReduce(p0, p0, 4, ir.F32, Sum, 0))
			check(t, w.comms[1].AllReduce(p1, p1, 5, ir.F32, Sum, 0))
			for r, c := range w.comms {
				err := c.Wait()
				want := "the ranks disagree: rank 0 called allreduce of 4 f32 (sum), rank 1 allreduce of 5 f32 (sum)"
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("rank %d: %v, want it to say %q", r, err, want)
				}
				if err2 := c.AllReduce(p0, p0, 4, ir.F32, Sum, 0); err2 == nil || err2.Error() != err.Error() {
					t.Errorf("rank %d: a call after the failure: %v", r, err2)
				}
			}
		})
	}
}

// TestRankLeaves: a rank that aborts, closes or never joins makes the others'
// collective fail naming it, within the timeout; nothing hangs.
func TestRankLeaves(t *testing.T) {
	for _, tc := range []struct {
		transport, how, want string
	}{
		{"local", "abort", "rank 2 aborted its communicator"},
		{"local", "close", "rank 2 closed its communicator"},
		{"local", "absent", "rank 2 did not join within 300ms"},
		{"tcp", "abort", "rank 2 lost its connection"},
		{"tcp", "close", "rank 2 closed its communicator"},
		{"tcp", "absent", "rank 2 did not join within 300ms"},
	} {
		t.Run(tc.transport+"/"+tc.how, func(t *testing.T) {
			mk := localWorld
			if tc.transport == "tcp" {
				mk = tcpWorld
			}
			w := mk(t, 3, Options{Timeout: 300 * time.Millisecond})
			defer w.close(t)
			switch tc.how {
			case "abort":
				check(t, w.comms[2].Abort())
			case "close":
				check(t, w.comms[2].Close())
			}
			start := time.Now()
			for r := range 2 {
				p := put(t, w.mems[r], ir.F32, []float64{1})
				check(t, w.comms[r].AllReduce(p, p, 1, ir.F32, Sum, 0))
			}
			for r := range 2 {
				err := w.comms[r].Wait()
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("rank %d: %v, want it to say %q", r, err, tc.want)
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the failure took %v", d)
			}
			err := w.comms[2].AllReduce(0, 0, 1, ir.F32, Sum, 0)
			if tc.how != "absent" && !errors.Is(err, ErrClosed) {
				t.Errorf("a call on the departed rank: %v", err)
			}
		})
	}
}

// TestHubLeaves: over TCP, rank 0 (the hub) going away fails the others'
// collectives naming it.
func TestHubLeaves(t *testing.T) {
	w := tcpWorld(t, 2, Options{Timeout: 2 * time.Second})
	defer w.close(t)
	check(t, w.comms[0].Abort())
	p := put(t, w.mems[1], ir.F32, []float64{1})
	check(t, w.comms[1].AllReduce(p, p, 1, ir.F32, Sum, 0))
	err := w.comms[1].Wait()
	if err == nil || !strings.Contains(err.Error(), "rank 0") {
		t.Errorf("rank 1: %v, want an error naming rank 0", err)
	}
}

// TestTCPJoin: a peer with the wrong world size is refused with the reason,
// and rank 0 gives up naming the ranks that never came.
func TestTCPJoin(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ServeTCP(ln, 3, simdev.New(simdev.Options{}), Options{Timeout: 500 * time.Millisecond})
		done <- err
	}()
	_, err = DialTCP(ln.Addr().String(), 1, 2, simdev.New(simdev.Options{}), Options{Timeout: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "rank 0 expects 3 ranks, this rank 2") {
		t.Errorf("DialTCP with the wrong size: %v", err)
	}
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "ranks [1 2] did not connect within 500ms") {
		t.Errorf("ServeTCP: %v", err)
	}
	// Nothing listens there any more: a rank that dials gives up in time.
	_, err = DialTCP(ln.Addr().String(), 1, 3, simdev.New(simdev.Options{}), Options{Timeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "cannot reach rank 0 at "+ln.Addr().String()) {
		t.Errorf("DialTCP to a closed port: %v", err)
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAbortWhileWaiting: Abort ends a collective that waits for a rank that
// has not come, at once rather than at the timeout, and the other rank's
// next collective names the aborted one.
func TestAbortWhileWaiting(t *testing.T) {
	for _, transport := range []string{"local", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			mk := localWorld
			if transport == "tcp" {
				mk = tcpWorld
			}
			w := mk(t, 2, Options{Timeout: time.Minute})
			defer w.close(t)
			p := put(t, w.mems[1], ir.F32, []float64{1})
			check(t, w.comms[1].AllReduce(p, p, 1, ir.F32, Sum, 0))
			time.Sleep(50 * time.Millisecond) // rank 1 is now waiting for rank 0
			start := time.Now()
			check(t, w.comms[1].Abort())
			if err := w.comms[1].Wait(); err == nil {
				t.Error("the aborted collective succeeded")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Abort took %v", d)
			}
			// Rank 1 had sent its part before it aborted, so over TCP rank 0's
			// first collective may still complete with it; the next cannot.
			var err error
			for range 2 {
				q := put(t, w.mems[0], ir.F32, []float64{1})
				check(t, w.comms[0].AllReduce(q, q, 1, ir.F32, Sum, 0))
				if err = w.comms[0].Wait(); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), "rank 1 ") {
				t.Errorf("rank 0 after rank 1's abort: %v", err)
			}
		})
	}
}
