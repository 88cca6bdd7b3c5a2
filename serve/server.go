package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/tensor"
)

// Config tunes a Server.
type Config struct {
	// Window is how long the first request of a batch waits for more rows; 0 runs every
	// request on its own (no dynamic batching).
	Window time.Duration
	// MaxBodyBytes bounds a request body; DefaultMaxBodyBytes if 0.
	MaxBodyBytes int64
	// Pool bounds the batches in flight at once (the session's pool size is the natural
	// value); 1 if 0.
	Pool int
	// The http.Server's timeouts (HTTPServer): reading a request's header, reading the whole
	// request, writing the reply (from the end of the header), and keeping an idle keep-alive
	// connection open. Zero is the Default one; slow or idle clients are cut off after them.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

// DefaultMaxBodyBytes is the default bound on a request body: 64 MiB.
const DefaultMaxBodyBytes = 64 << 20

// The default timeouts of HTTPServer. WriteTimeout leaves room for a run on the simulator.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 2 * time.Minute
	DefaultIdleTimeout       = 60 * time.Second
)

// Server serves one session's model over HTTP. Its Handler is safe for concurrent requests.
type Server struct {
	sess  *gcomp.Session
	cfg   Config
	batch int // rows per run; 0 when the model has no batch dimension
	// dynamic is set when the batch is a dim of the model (built over a symbolic batch, as
	// Options.MaxBatch does): a run then carries the rows that came, padded only up to the
	// dim's lower end, lo.
	dynamic bool
	lo      int
	// inputs and outputs are the model's, by name, in declaration order.
	inputs, outputs []gcomp.TensorInfo

	queue chan *job
	stop  chan struct{}
	mu    sync.Mutex // guards closed
	// closed is set by Close: requests after it get 503.
	closed  bool
	batches sync.WaitGroup // batches running
	loop    sync.WaitGroup // the batching goroutine
	sem     chan struct{}  // one token per batch in flight

	requests, runs, rows, padded atomic.Int64
}

// Stats count what the server did: requests answered from a run, runs of the model, the rows
// those runs carried for requests (rows/runs over the batch is how full the batches were), and
// the rows of zeros that padded them to the model's batch (none for a model over a symbolic
// batch, unless its range starts above the rows that came).
type Stats struct {
	Requests, Runs, Rows, Padded int64
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.requests.Load(), Runs: s.runs.Load(), Rows: s.rows.Load(), Padded: s.padded.Load()}
}

// New returns a server for sess's model. With cfg.Window > 0 it starts the goroutine that
// gathers batches; Close stops it.
func New(sess *gcomp.Session, cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	cfg.Pool = max(cfg.Pool, 1)
	for _, t := range []struct {
		d   *time.Duration
		def time.Duration
	}{{&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout}, {&cfg.ReadTimeout, DefaultReadTimeout}, {&cfg.WriteTimeout, DefaultWriteTimeout}, {&cfg.IdleTimeout, DefaultIdleTimeout}} {
		if *t.d <= 0 {
			*t.d = t.def
		}
	}
	m := sess.Model()
	s := &Server{sess: sess, cfg: cfg, inputs: m.Inputs(), outputs: m.Outputs(),
		queue: make(chan *job), stop: make(chan struct{}), sem: make(chan struct{}, cfg.Pool)}
	all := append(slices.Clone(s.inputs), s.outputs...)
	s.batch = batchOf(all)
	if s.batch > 0 {
		s.lo, s.dynamic = batchDim(m.Dims(), all)
	}
	if cfg.Window > 0 && s.batch > 1 {
		s.loop.Add(1)
		go s.gather()
	}
	return s
}

// batchOf is the first dimension every tensor shares, or 0 when they do not share one.
func batchOf(ts []gcomp.TensorInfo) int {
	b := 0
	for _, t := range ts {
		if len(t.Shape) == 0 || (b != 0 && t.Shape[0] != b) {
			return 0
		}
		b = t.Shape[0]
	}
	return b
}

// batchDim is the lower end of the dim every tensor leads with, and whether there is one: a dim
// of the model's, and no other axis's size depends on it (so a run of fewer rows changes the
// leading axes only).
func batchDim(dims []gcomp.Dim, ts []gcomp.TensorInfo) (int, bool) {
	name := ts[0].Dims
	if name == nil {
		return 0, false
	}
	i := slices.IndexFunc(dims, func(d gcomp.Dim) bool { return d.Name == name[0] })
	if i < 0 {
		return 0, false
	}
	for _, t := range ts {
		if t.Dims == nil || t.Dims[0] != name[0] {
			return 0, false
		}
		for _, d := range t.Dims[1:] {
			e, err := sym.Parse(d)
			if err != nil || slices.Contains(e.Symbols(), name[0]) {
				return 0, false
			}
		}
	}
	return dims[i].Lo, true
}

// Batch is the most rows of one run: the model's batch (its bound, for a model over a symbolic
// batch), or 0 when the model has none (requests then carry the inputs' full shapes).
func (s *Server) Batch() int { return s.batch }

// HTTPServer is an http.Server for addr serving Handler with the Config's timeouts, so that
// clients that send slowly, read slowly or hold idle connections are cut off instead of holding
// a connection (and its goroutine and buffers) forever.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{Addr: addr, Handler: s.Handler(), ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout: s.cfg.ReadTimeout, WriteTimeout: s.cfg.WriteTimeout, IdleTimeout: s.cfg.IdleTimeout}
}

// Handler serves the endpoints of the package doc.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/infer", s.infer)
	mux.HandleFunc("/v1/model", s.describe)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if s.isClosed() {
			writeError(w, &httpError{http.StatusServiceUnavailable, "the server is shutting down"})
			return
		}
		w.Write([]byte("ok\n"))
	})
	return mux
}

// Close stops taking requests (they get 503), lets the batches gathered run, and stops the
// batching goroutine. Call it after http.Server.Shutdown has finished the requests in flight.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.loop.Wait()
	s.batches.Wait()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// httpError is a reply status and its message.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var he *httpError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		code = he.code
	case errors.As(err, &mb):
		code = http.StatusRequestEntityTooLarge
		err = fmt.Errorf("the request body is larger than %d bytes", mb.Limit)
	case errors.Is(err, context.DeadlineExceeded):
		code = http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled), errors.Is(err, gcomp.ErrClosed):
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

func (s *Server) describe(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, &httpError{http.StatusMethodNotAllowed, "use GET"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"name": s.sess.Model().Name(), "device": s.sess.Device(), "batch": s.batch,
		"inputs": s.inputs, "outputs": s.outputs,
	})
}

func (s *Server) infer(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, &httpError{http.StatusMethodNotAllowed, "use POST"})
		return
	}
	if s.isClosed() {
		writeError(w, &httpError{http.StatusServiceUnavailable, "the server is shutting down"})
		return
	}
	if r.ContentLength > s.cfg.MaxBodyBytes { // refused before a byte of it is read
		w.Header().Set("Connection", "close")
		writeError(w, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes (Content-Length %d)", s.cfg.MaxBodyBytes, r.ContentLength)})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	reply, err := replyFormat(r, s.outputs)
	if err != nil {
		writeError(w, err)
		return
	}
	in, rows, err := s.decode(r)
	if err != nil {
		writeError(w, err)
		return
	}
	out, err := s.submit(r.Context(), &job{in: in, rows: rows, done: make(chan result, 1)})
	if err != nil {
		writeError(w, err)
		return
	}
	reply(w, out)
}

// job is one request's rows on their way through a batch.
type job struct {
	in   map[string]*tensor.Tensor // by input name, [rows, ...] each
	rows int
	done chan result // receives once
}

type result struct {
	out map[string]*tensor.Tensor
	err error
}

// submit runs j, alone or in the next batch, and returns its outputs.
func (s *Server) submit(ctx context.Context, j *job) (map[string]*tensor.Tensor, error) {
	if s.cfg.Window <= 0 || s.batch <= 1 {
		s.sem <- struct{}{}
		s.run(ctx, []*job{j}) // alone: the request's context bounds its run
		<-s.sem
	} else {
		select {
		case s.queue <- j:
		case <-s.stop:
			return nil, &httpError{http.StatusServiceUnavailable, "the server is shutting down"}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case res := <-j.done:
		return res.out, res.err
	case <-ctx.Done(): // the client went away; its batch still runs for the others
		return nil, ctx.Err()
	}
}

// gather forms batches: once a run can start (fewer than Pool batches in flight), the first
// request waits up to Window for more, until the batch is full; a request that would overflow
// it starts the next batch. While every run is busy requests queue up, so the next batch takes
// them all. Each batch runs in a goroutine of its own.
func (s *Server) gather() {
	defer s.loop.Done()
	var carry *job
	for {
		select {
		case s.sem <- struct{}{}:
		case <-s.stop:
			if carry != nil {
				carry.done <- result{err: &httpError{http.StatusServiceUnavailable, "the server is shutting down"}}
			}
			return
		}
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-s.queue:
			case <-s.stop:
				<-s.sem
				return
			}
		}
		jobs, rows := []*job{first}, first.rows
		timer := time.NewTimer(s.cfg.Window)
	collect:
		for rows < s.batch {
			select {
			case j := <-s.queue:
				if rows+j.rows > s.batch {
					carry = j
					break collect
				}
				jobs, rows = append(jobs, j), rows+j.rows
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		s.batches.Add(1)
		go func() {
			defer s.batches.Done()
			s.run(context.Background(), jobs) // shared: no one request's context may stop it
			<-s.sem
		}()
	}
}

// run runs the jobs' rows as one batch (zero rows pad it to the model's batch; over a symbolic
// batch, only to its dim's lower end) and gives each job its rows of the outputs.
func (s *Server) run(ctx context.Context, jobs []*job) {
	rows, n := 0, s.batch
	for _, j := range jobs {
		rows += j.rows
	}
	if s.dynamic {
		n = max(rows, s.lo)
	}
	inputs := map[string]*gcomp.Tensor{}
	for _, info := range s.inputs {
		if s.batch == 0 {
			inputs[info.Name] = gcomp.FromHost(jobs[0].in[info.Name])
			continue
		}
		typ := typeOf(info)
		typ.Shape[0] = n
		full := tensor.New(typ)
		off := 0
		for _, j := range jobs {
			t := j.in[info.Name]
			if full.F != nil {
				off += copy(full.F[off:], t.F)
			} else {
				off += copy(full.I[off:], t.I)
			}
		}
		inputs[info.Name] = gcomp.FromHost(full)
	}
	outs, err := s.sess.Run(ctx, inputs)
	s.runs.Add(1)
	s.requests.Add(int64(len(jobs)))
	s.rows.Add(int64(rows))
	if s.batch > 0 {
		s.padded.Add(int64(n - rows))
	}
	if err != nil {
		for _, j := range jobs {
			j.done <- result{err: err}
		}
		return
	}
	host := map[string]*tensor.Tensor{}
	for name, t := range outs {
		host[name] = t.Host()
	}
	row := 0
	for _, j := range jobs {
		res := map[string]*tensor.Tensor{}
		for _, info := range s.outputs {
			if s.batch == 0 {
				res[info.Name] = host[info.Name]
				continue
			}
			res[info.Name] = rowsOf(host[info.Name], row, j.rows)
		}
		row += j.rows
		j.done <- result{out: res}
	}
}

// rowsOf is rows [from, from+n) of t along its first dimension.
func rowsOf(t *tensor.Tensor, from, n int) *tensor.Tensor {
	shape := slices.Clone(t.Type.Shape)
	per := t.Len() / shape[0]
	shape[0] = n
	out := &tensor.Tensor{Type: ir.Type{DType: t.Type.DType, Shape: shape}}
	if t.F != nil {
		out.F = t.F[from*per : (from+n)*per]
	} else {
		out.I = t.I[from*per : (from+n)*per]
	}
	return out
}

func typeOf(info gcomp.TensorInfo) ir.Type {
	d, _ := ir.ParseDType(info.DType)
	return ir.Type{DType: d, Shape: ir.Shape(slices.Clone(info.Shape))}
}
