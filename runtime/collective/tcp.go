package collective

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gcomp/gcomp/ir"
)

// The simulated collective across processes: rank 0 serves the hub on a TCP
// listener and every other rank dials it with one connection. A connection
// starts with a hello (magic, rank, size) answered by a status; then each
// collective is one request (frameCall: seq, the call, the rank's bytes)
// answered by one response (status, then the result or the error's text).
// A rank that closes its communicator says so (frameBye) before hanging up.

var magic = [8]byte{'g', 'c', 'o', 'l', 'l', 0, 0, 1}

const (
	frameCall byte = 1
	frameBye  byte = 2
)

// ServeTCP makes rank 0 of size ranks, the hub, on ln: it returns once the
// other size−1 ranks have connected (DialTCP), or fails naming those that
// did not within the timeout. Closing the communicator closes ln.
func ServeTCP(ln net.Listener, size int, mem Memory, opt Options) (Comm, error) {
	if size < 1 {
		return nil, fmt.Errorf("collective: %d ranks", size)
	}
	if err := checkMemory(mem); err != nil {
		return nil, fmt.Errorf("collective: rank 0: %w", err)
	}
	h := newHub(size, opt.timeout())
	conns := make([]net.Conn, size)
	deadline := time.Now().Add(opt.timeout())
	var answering atomic.Int64 // answers being computed or sent (serve)
	closeAll := func() error {
		// Rank 0's last collective may finish before the others' answers are written: closing
		// their connections then would lose them.
		waitAtMost(&answering, opt.timeout())
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return ln.Close()
	}
	for joined := 1; joined < size; {
		if tl, ok := ln.(interface{ SetDeadline(time.Time) error }); ok {
			tl.SetDeadline(deadline)
		}
		conn, err := ln.Accept()
		if err != nil {
			var missing []int
			for r := 1; r < size; r++ {
				if conns[r] == nil {
					missing = append(missing, r)
				}
			}
			closeAll()
			return nil, fmt.Errorf("collective: rank 0 at %s: ranks %v did not connect within %v: %w", ln.Addr(), missing, opt.timeout(), err)
		}
		// A connection that says nothing holds up the others only briefly.
		r, err := hello(conn, size, conns, earliest(deadline, time.Now().Add(helloTimeout)))
		if err != nil {
			conn.Close() // a stray or confused peer: keep waiting for the real ones
			continue
		}
		conns[r] = conn
		joined++
	}
	if tl, ok := ln.(interface{ SetDeadline(time.Time) error }); ok {
		tl.SetDeadline(time.Time{})
	}
	for r := 1; r < size; r++ {
		go serve(h, r, size, conns[r], opt, &answering)
	}
	return newSimComm(0, size, mem, h, closeAll), nil
}

// helloTimeout bounds how long rank 0 waits for a connection's greeting.
const helloTimeout = 10 * time.Second

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// hello reads a peer's greeting and answers it.
func hello(conn net.Conn, size int, conns []net.Conn, deadline time.Time) (int, error) {
	conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	var m [8]byte
	var rank, n uint32
	if _, err := io.ReadFull(conn, m[:]); err != nil {
		return 0, err
	}
	if m != magic {
		return 0, errors.New("not a gcomp collective peer")
	}
	if err := binary.Read(conn, le, &rank); err != nil {
		return 0, err
	}
	if err := binary.Read(conn, le, &n); err != nil {
		return 0, err
	}
	var problem string
	switch {
	case int(n) != size:
		problem = fmt.Sprintf("rank 0 expects %d ranks, this rank %d", size, n)
	case rank == 0 || int(rank) >= size:
		problem = fmt.Sprintf("rank %d is not one of ranks 1..%d", rank, size-1)
	case conns[rank] != nil:
		problem = fmt.Sprintf("rank %d is already connected", rank)
	}
	if err := writeStatus(conn, problem, nil); err != nil {
		return 0, err
	}
	if problem != "" {
		return 0, errors.New(problem)
	}
	return int(rank), nil
}

// writeStatus writes a response: ok and data, or the problem's text.
func writeStatus(w io.Writer, problem string, data []byte) error {
	bw := bufio.NewWriter(w)
	status, body := byte(0), data
	if problem != "" {
		status, body = 1, []byte(problem)
	}
	bw.WriteByte(status)
	binary.Write(bw, le, uint64(len(body)))
	bw.Write(body)
	return bw.Flush()
}

// readStatus reads a response; max bounds its length.
func readStatus(r io.Reader, max int64) ([]byte, error) {
	var hdr [9]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := le.Uint64(hdr[1:])
	if n > uint64(max) {
		return nil, fmt.Errorf("a response of %d bytes (more than %d)", n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	if hdr[0] != 0 {
		return nil, &remoteError{string(body)}
	}
	return body, nil
}

// remoteError is an error the hub reported for this rank's call.
type remoteError struct{ msg string }

func (e *remoteError) Error() string { return e.msg }

// request is what serve's reader got from a rank: a collective, or the end
// of the connection (why says how it ended).
type request struct {
	seq  uint64
	c    call
	data []byte
	why  string
}

// serve carries rank r's requests to the hub until the connection ends. It
// keeps reading while a collective waits, so a rank whose connection breaks
// then is gone at once, failing the collective for the others too.
func serve(h *hub, r, size int, conn net.Conn, opt Options, answering *atomic.Int64) {
	defer conn.Close()
	reqs := make(chan request)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		br := bufio.NewReader(conn)
		for {
			var q request
			typ, err := br.ReadByte()
			switch {
			case err != nil:
				q.why = "lost its connection (" + err.Error() + ")"
			case typ == frameBye:
				q.why = "closed its communicator"
			default:
				if q.seq, q.c, q.data, err = readCall(br, typ, size, opt.maxMessage()); err != nil {
					q.why = "sent a bad request (" + err.Error() + ")"
				}
			}
			select {
			case reqs <- q:
			case <-quit:
				return
			}
			if q.why != "" {
				return
			}
		}
	}()
	type result struct {
		out []byte
		err error
	}
	for q := range reqs {
		if q.why != "" {
			h.leave(r, q.why)
			return
		}
		done := make(chan result, 1)
		answering.Add(1)
		go func() {
			out, err := h.exchange(q.seq, r, q.c, q.data)
			done <- result{out, err}
		}()
		var res result
		select {
		case res = <-done:
		case next := <-reqs: // a rank sends nothing while it waits: its connection ended
			why := next.why
			if why == "" {
				why = "sent a request before its answer"
			}
			h.leave(r, why)
			<-done
			answering.Add(-1)
			return
		}
		problem := ""
		if res.err != nil {
			problem = res.err.Error()
		}
		conn.SetWriteDeadline(time.Now().Add(opt.timeout()))
		err := writeStatus(conn, problem, res.out)
		answering.Add(-1)
		if err != nil {
			h.leave(r, "lost its connection ("+err.Error()+")")
			return
		}
	}
}

// waitAtMost waits until n is 0, or d at most.
func waitAtMost(n *atomic.Int64, d time.Duration) {
	for end := time.Now().Add(d); n.Load() > 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
}

// callHeader is a request's fixed part after its type byte.
type callHeader struct {
	Seq   uint64
	Kind  uint8
	DType uint8
	Op    uint8
	_     uint8
	Root  uint32
	Count uint64
	Len   uint64
}

// readCall reads a request, checking it before allocating its bytes.
func readCall(r io.Reader, typ byte, size int, max int64) (uint64, call, []byte, error) {
	if typ != frameCall {
		return 0, call{}, nil, fmt.Errorf("frame type %d", typ)
	}
	var h callHeader
	if err := binary.Read(r, le, &h); err != nil {
		return 0, call{}, nil, err
	}
	if h.Count > 1<<50 || h.Root > 1<<20 {
		return 0, call{}, nil, fmt.Errorf("count %d, root %d", h.Count, h.Root)
	}
	c := call{Kind: kind(h.Kind), DType: ir.DType(h.DType), Op: Op(h.Op), Root: int(h.Root), Count: int(h.Count)}
	if c.Kind < allReduce || c.Kind > reduceScatter {
		return 0, call{}, nil, fmt.Errorf("unknown collective %d", h.Kind)
	}
	if err := c.validate(size); err != nil {
		return 0, call{}, nil, err
	}
	if h.Len > uint64(max) {
		return 0, call{}, nil, fmt.Errorf("%d bytes (more than %d)", h.Len, max)
	}
	data := make([]byte, h.Len)
	if _, err := io.ReadFull(r, data); err != nil {
		return 0, call{}, nil, err
	}
	return h.Seq, c, data, nil
}

// DialTCP makes rank (of size) a rank of the simulated collective served by
// rank 0 at addr, retrying the connection until the timeout.
func DialTCP(addr string, rank, size int, mem Memory, opt Options) (Comm, error) {
	if rank < 1 || rank >= size {
		return nil, fmt.Errorf("collective: rank %d is not one of ranks 1..%d", rank, size-1)
	}
	if err := checkMemory(mem); err != nil {
		return nil, fmt.Errorf("collective: rank %d: %w", rank, err)
	}
	deadline := time.Now().Add(opt.timeout())
	var conn net.Conn
	var err error
	for {
		conn, err = net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("collective: rank %d: cannot reach rank 0 at %s within %v: %w", rank, addr, opt.timeout(), err)
	}
	conn.SetDeadline(deadline)
	bw := bufio.NewWriter(conn)
	bw.Write(magic[:])
	binary.Write(bw, le, uint32(rank))
	binary.Write(bw, le, uint32(size))
	if err = bw.Flush(); err == nil {
		_, err = readStatus(conn, 1<<16)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("collective: rank %d: joining rank 0 at %s: %w", rank, addr, err)
	}
	conn.SetDeadline(time.Time{})
	cl := &client{conn: conn, addr: addr, size: size, br: bufio.NewReader(conn), opt: opt}
	return newSimComm(rank, size, mem, cl, nil), nil
}

// client is a rank's connection to the hub.
type client struct {
	conn net.Conn
	addr string
	size int
	br   *bufio.Reader
	opt  Options

	wmu sync.Mutex // a request and a goodbye may race
}

func (cl *client) exchange(seq uint64, rank int, c call, data []byte) ([]byte, error) {
	h := callHeader{Seq: seq, Kind: uint8(c.Kind), DType: uint8(c.DType), Op: uint8(c.Op), Root: uint32(c.Root), Count: uint64(c.Count), Len: uint64(len(data))}
	cl.wmu.Lock()
	cl.conn.SetWriteDeadline(time.Now().Add(cl.opt.timeout()))
	bw := bufio.NewWriter(cl.conn)
	bw.WriteByte(frameCall)
	binary.Write(bw, le, &h)
	bw.Write(data)
	err := bw.Flush()
	cl.wmu.Unlock()
	if err == nil {
		// The hub answers within its own timeout; allow as long again.
		cl.conn.SetReadDeadline(time.Now().Add(2 * cl.opt.timeout()))
		var out []byte
		out, err = readStatus(cl.br, int64(c.recvElems(cl.size))*int64(c.DType.Size())+1<<16)
		if err == nil {
			return out, nil
		}
		var re *remoteError
		if errors.As(err, &re) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s #%d: rank 0 (the hub at %s) is gone: %w", c, seq, cl.addr, err)
}

func (cl *client) leave(rank int, why string) {
	cl.wmu.Lock()
	defer cl.wmu.Unlock()
	if why == "closed its communicator" {
		cl.conn.SetWriteDeadline(time.Now().Add(time.Second))
		cl.conn.Write([]byte{frameBye})
	}
	cl.conn.Close()
}
