package rendezvous

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Config is one node's part.
type Config struct {
	// Addr is node 0's HOST:PORT: where it listens, where the others dial.
	Addr string
	// Listener, on node 0, replaces listening on Addr (tests pass port 0's).
	Listener net.Listener
	// NNodes is the number of nodes, NodeRank this node's (0 is the server).
	NNodes, NodeRank int
	// LocalDevices is how many devices (ranks) this node drives.
	LocalDevices int
	// ModelHash and Batch must be the same on every node.
	ModelHash string
	Batch     int
	// Settings are the rest of the training's configuration (learning rate, seed, loss,
	// epochs, schedule, ...), which must be the same on every node too; a difference is named
	// by Name.
	Settings []Setting
	// Payload, on node 0, is what every node receives (the NCCL unique id,
	// the simulated collective's address).
	Payload []byte
	// Timeout bounds the whole rendezvous; 0 means DefaultTimeout.
	Timeout time.Duration
	// Handshake bounds, on node 0, how long a connection may take to say who it is (a node
	// sends its hello at once); 0 means DefaultHandshake. Handshakes run concurrently, so a
	// connection that says nothing delays no one.
	Handshake time.Duration
}

// Setting is one named part of the training's configuration, as the user would write it
// ("--lr", "0.01").
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MaxNodes bounds NNodes: node 0 keeps a connection per node.
const MaxNodes = 4096

// DefaultHandshake is how long node 0 waits for a connection's hello by default.
const DefaultHandshake = 10 * time.Second

// maxPending bounds the handshakes node 0 runs at once; connections past it are closed.
const maxPending = 256

// DefaultTimeout is how long a rendezvous waits by default (torchrun's is
// 900 s; nodes of one job usually start within a minute of each other).
const DefaultTimeout = 5 * time.Minute

// World is what the rendezvous agreed on.
type World struct {
	// Devices is each node's device count, by node rank.
	Devices []int `json:"devices"`
	// Size is the number of ranks, every node's devices together.
	Size int `json:"size"`
	// NodeRank is this node's; FirstRank the global rank of its first device
	// (the devices of node 0, then node 1's, ...).
	NodeRank  int `json:"node_rank"`
	FirstRank int `json:"first_rank"`
	// Payload is node 0's.
	Payload   []byte `json:"payload"`
	ModelHash string `json:"model_hash"`
	Batch     int    `json:"batch"`
}

// hello is what a node tells node 0.
type hello struct {
	Magic        string    `json:"magic"`
	NodeRank     int       `json:"node_rank"`
	NNodes       int       `json:"nnodes"`
	LocalDevices int       `json:"local_devices"`
	ModelHash    string    `json:"model_hash"`
	Batch        int       `json:"batch"`
	Settings     []Setting `json:"settings,omitempty"`
}

// reply is node 0's answer: the world, the go-ahead, or the error that ends
// the rendezvous everywhere.
type reply struct {
	World *World `json:"world,omitempty"`
	Go    bool   `json:"go,omitempty"`
	Error string `json:"error,omitempty"`
}

const magic = "gcomp-rendezvous-1"

// maxMessage bounds what a peer may send in all (a hello is ~200 bytes).
const maxMessage = 1 << 16

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c Config) handshake() time.Duration {
	if c.Handshake > 0 {
		return c.Handshake
	}
	return DefaultHandshake
}

func (c Config) hello() hello {
	return hello{Magic: magic, NodeRank: c.NodeRank, NNodes: c.NNodes, LocalDevices: c.LocalDevices,
		ModelHash: c.ModelHash, Batch: c.Batch, Settings: c.Settings}
}

func (c Config) check() error {
	switch {
	case c.NNodes < 1:
		return fmt.Errorf("rendezvous: %d nodes", c.NNodes)
	case c.NNodes > MaxNodes:
		return fmt.Errorf("rendezvous: %d nodes: at most %d", c.NNodes, MaxNodes)
	case c.NodeRank < 0 || c.NodeRank >= c.NNodes:
		return fmt.Errorf("rendezvous: node rank %d is not one of 0..%d", c.NodeRank, c.NNodes-1)
	case c.LocalDevices < 1:
		return fmt.Errorf("rendezvous: node %d drives %d devices", c.NodeRank, c.LocalDevices)
	case c.Addr == "" && c.Listener == nil:
		return errors.New("rendezvous: no address (HOST:PORT of node 0)")
	}
	return nil
}

// Join takes part in the rendezvous and returns the world, or the error
// every node gets.
func Join(cfg Config) (*World, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.NodeRank == 0 {
		return serve(cfg)
	}
	return dial(cfg)
}

// peer is a joined node, seen from node 0.
type peer struct {
	conn net.Conn
	dec  *json.Decoder
	h    hello
}

func newPeer(conn net.Conn) *peer {
	return &peer{conn: conn, dec: json.NewDecoder(io.LimitReader(conn, maxMessage))}
}

func (p *peer) name() string {
	return fmt.Sprintf("node %d (%s)", p.h.NodeRank, p.conn.RemoteAddr())
}

func serve(cfg Config) (*World, error) {
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return nil, fmt.Errorf("rendezvous: node 0 cannot listen on %s: %w", cfg.Addr, err)
		}
	}
	deadline := time.Now().Add(cfg.timeout())
	self := cfg.hello()
	peers := make([]*peer, cfg.NNodes)
	var joined []*peer
	fail := func(err error) (*World, error) {
		for _, p := range joined {
			p.conn.SetWriteDeadline(time.Now().Add(time.Second))
			json.NewEncoder(p.conn).Encode(reply{Error: err.Error()})
			p.conn.Close()
		}
		return nil, err
	}
	arrivals, stop := accept(ln, deadline, cfg.handshake())
	defer stop()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for len(joined) < cfg.NNodes-1 {
		select {
		case p := <-arrivals:
			if err := agree(self, p.h, p.conn.RemoteAddr(), peers); err != nil {
				joined = append(joined, p)
				return fail(err)
			}
			peers[p.h.NodeRank] = p
			joined = append(joined, p)
			if joinedHook != nil {
				joinedHook(p.h.NodeRank)
			}
		case <-timer.C:
			var missing []string
			for r := 1; r < cfg.NNodes; r++ {
				if peers[r] == nil {
					missing = append(missing, fmt.Sprint(r))
				}
			}
			return fail(fmt.Errorf("rendezvous: node %s did not join node 0 at %s within %v", list(missing), ln.Addr(), cfg.timeout()))
		}
	}
	devices := []int{cfg.LocalDevices}
	for _, p := range peers[1:] {
		devices = append(devices, p.h.LocalDevices)
	}
	world := func(node int) *World {
		w := &World{Devices: devices, NodeRank: node, Payload: cfg.Payload, ModelHash: cfg.ModelHash, Batch: cfg.Batch}
		for n, d := range devices {
			if n < node {
				w.FirstRank += d
			}
			w.Size += d
		}
		return w
	}
	// Send each node the world, then wait until every node has it (a node
	// that dies now is named here), then let them all go.
	for _, p := range peers[1:] {
		p.conn.SetWriteDeadline(deadline)
		if err := json.NewEncoder(p.conn).Encode(reply{World: world(p.h.NodeRank)}); err != nil {
			return fail(fmt.Errorf("rendezvous: %s left: %w", p.name(), err))
		}
	}
	for _, p := range peers[1:] {
		p.conn.SetReadDeadline(deadline)
		var ack struct{ Ready bool }
		if err := p.dec.Decode(&ack); err != nil || !ack.Ready {
			if err == nil {
				err = errors.New("it did not confirm")
			}
			return fail(fmt.Errorf("rendezvous: %s left before the rendezvous finished: %w", p.name(), err))
		}
	}
	for _, p := range peers[1:] {
		json.NewEncoder(p.conn).Encode(reply{Go: true})
		p.conn.Close()
	}
	return world(0), nil
}

// accept accepts connections on ln until deadline and reads each one's hello concurrently,
// within handshake of its arrival; the peers whose hello is ours arrive on the channel, in the
// order their hellos complete. Connections that say nothing, or something else, are closed and
// forgotten: they never hold up a node nor take its place. stop closes ln and every connection
// still in its handshake.
func accept(ln net.Listener, deadline time.Time, handshake time.Duration) (<-chan *peer, func()) {
	arrivals := make(chan *peer)
	done := make(chan struct{})
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pending := make(chan struct{}, maxPending)
		for {
			if tl, ok := ln.(interface{ SetDeadline(time.Time) error }); ok {
				tl.SetDeadline(deadline)
			}
			conn, err := ln.Accept()
			if err != nil {
				var ne net.Error
				if errors.Is(err, net.ErrClosed) || (errors.As(err, &ne) && ne.Timeout()) {
					return // stopped, or past the deadline: serve's timer speaks
				}
				time.Sleep(10 * time.Millisecond) // out of descriptors: try again
				continue
			}
			select {
			case pending <- struct{}{}:
			default:
				conn.Close() // too many handshakes at once
				continue
			}
			mu.Lock()
			select {
			case <-done:
				mu.Unlock()
				conn.Close()
				return
			default:
			}
			open[conn] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-pending }()
				p := newPeer(conn)
				hd := time.Now().Add(handshake)
				if deadline.Before(hd) {
					hd = deadline
				}
				conn.SetReadDeadline(hd)
				err := p.dec.Decode(&p.h)
				mu.Lock()
				delete(open, conn)
				mu.Unlock()
				if err != nil || p.h.Magic != magic {
					conn.Close() // not a node of ours, or silent: keep waiting for them
					return
				}
				conn.SetReadDeadline(time.Time{})
				select {
				case arrivals <- p:
				case <-done:
					conn.Close()
				}
			}()
		}
	}()
	stop := func() {
		mu.Lock()
		close(done)
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		ln.Close()
		wg.Wait()
	}
	return arrivals, stop
}

// list joins names for a message, the first ten and how many more.
func list(names []string) string {
	const show = 10
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:show], ", "), len(names)-show)
}

// joinedHook, if set (by tests), hears of each node that joins node 0.
var joinedHook func(node int)

// agree checks a node's hello against node 0's and the nodes already there.
func agree(self, h hello, addr net.Addr, peers []*peer) error {
	switch {
	case h.NNodes != self.NNodes:
		return fmt.Errorf("rendezvous: node %d expects %d nodes, node 0 %d", h.NodeRank, h.NNodes, self.NNodes)
	case h.NodeRank < 1 || h.NodeRank >= self.NNodes:
		return fmt.Errorf("rendezvous: a node says it is node %d, not one of 1..%d", h.NodeRank, self.NNodes-1)
	case peers[h.NodeRank] != nil:
		return fmt.Errorf("rendezvous: two nodes say they are node %d (%s and %s)", h.NodeRank, peers[h.NodeRank].conn.RemoteAddr(), addr)
	case h.ModelHash != self.ModelHash:
		return fmt.Errorf("rendezvous: node %d has model %s, node 0 %s: every node must train the same model", h.NodeRank, h.ModelHash, self.ModelHash)
	case h.Batch != self.Batch:
		return fmt.Errorf("rendezvous: node %d has batch %d, node 0 %d", h.NodeRank, h.Batch, self.Batch)
	case h.LocalDevices < 1:
		return fmt.Errorf("rendezvous: node %d drives %d devices", h.NodeRank, h.LocalDevices)
	}
	if d := differences(self.Settings, h.Settings); len(d) > 0 {
		return fmt.Errorf("rendezvous: node %d trains otherwise than node 0: %s", h.NodeRank, list(d))
	}
	return nil
}

// differences names every setting whose value differs between node 0's (self) and a node's
// (other), in node 0's order, then the node's own: "--lr 0.1 (node 0: 0.01)".
func differences(self, other []Setting) []string {
	const unset = "unset"
	mine := map[string]string{}
	for _, s := range self {
		mine[s.Name] = s.Value
	}
	theirs := map[string]string{}
	for _, s := range other {
		theirs[s.Name] = s.Value
	}
	var d []string
	seen := map[string]bool{}
	for _, ss := range [][]Setting{self, other} {
		for _, s := range ss {
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			a, aok := mine[s.Name]
			b, bok := theirs[s.Name]
			if a != b || aok != bok {
				if !aok {
					a = unset
				}
				if !bok {
					b = unset
				}
				d = append(d, fmt.Sprintf("%s %s (node 0: %s)", clip(s.Name), clip(b), clip(a)))
			}
		}
	}
	return d
}

// clip shortens what a peer sent for a message, quoted if it is not plain text.
func clip(s string) string {
	const most = 80
	long := len(s) > most
	if long {
		s = s[:most]
	}
	if long || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		s = strconv.Quote(s)
	}
	if long {
		s += "..."
	}
	return s
}

func dial(cfg Config) (*World, error) {
	deadline := time.Now().Add(cfg.timeout())
	var conn net.Conn
	var err error
	for {
		conn, err = net.DialTimeout("tcp", cfg.Addr, time.Until(deadline))
		if err == nil || !time.Now().Add(100*time.Millisecond).Before(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // node 0 may not be listening yet
	}
	if err != nil {
		return nil, fmt.Errorf("rendezvous: node %d cannot reach node 0 at %s within %v: %w", cfg.NodeRank, cfg.Addr, cfg.timeout(), err)
	}
	defer conn.Close()
	lost := func(err error) error {
		return fmt.Errorf("rendezvous: node %d lost node 0 at %s: %w", cfg.NodeRank, cfg.Addr, err)
	}
	// Node 0 may wait for slower nodes up to its own timeout.
	conn.SetDeadline(deadline.Add(cfg.timeout()))
	if err := json.NewEncoder(conn).Encode(cfg.hello()); err != nil {
		return nil, lost(err)
	}
	dec := json.NewDecoder(io.LimitReader(conn, maxMessage))
	var rep reply
	if err := dec.Decode(&rep); err != nil {
		return nil, lost(err)
	}
	if rep.Error != "" {
		return nil, errors.New(rep.Error)
	}
	w := rep.World
	if w == nil || w.NodeRank != cfg.NodeRank || len(w.Devices) != cfg.NNodes || w.Devices[cfg.NodeRank] != cfg.LocalDevices {
		return nil, lost(errors.New("a malformed world"))
	}
	// Node 0 checked this node's hello; check its answer too.
	if w.ModelHash != cfg.ModelHash || w.Batch != cfg.Batch {
		return nil, fmt.Errorf("rendezvous: node 0 answered for model %s, batch %d; node %d has model %s, batch %d", w.ModelHash, w.Batch, cfg.NodeRank, cfg.ModelHash, cfg.Batch)
	}
	if err := json.NewEncoder(conn).Encode(struct{ Ready bool }{true}); err != nil {
		return nil, lost(err)
	}
	rep = reply{}
	if err := dec.Decode(&rep); err != nil {
		return nil, lost(err)
	}
	if rep.Error != "" {
		return nil, errors.New(rep.Error)
	}
	if !rep.Go {
		return nil, lost(errors.New("no go-ahead"))
	}
	return w, nil
}

// Ranks lists the global ranks of node's devices.
func (w *World) Ranks() []int {
	r := make([]int, w.Devices[w.NodeRank])
	for i := range r {
		r[i] = w.FirstRank + i
	}
	return r
}
