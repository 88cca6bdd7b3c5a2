package rendezvous

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp/internal/reexec"
)

// The test binary re-executed as a node of a rendezvous: GCOMP_RDZV_NODE
// holds its config as JSON; it prints its world as JSON (or "error: ...")
// and exits. With GCOMP_RDZV_HANG it stops after the hello and waits to be
// killed, as a node that dies mid-rendezvous.
func TestMain(m *testing.M) {
	if cfg := os.Getenv("GCOMP_RDZV_NODE"); cfg != "" {
		os.Exit(child(cfg))
	}
	os.Exit(m.Run())
}

func child(js string) int {
	var cfg Config
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	if os.Getenv("GCOMP_RDZV_HANG") != "" {
		conn, err := net.Dial("tcp", cfg.Addr)
		if err != nil {
			fmt.Println("error:", err)
			return 2
		}
		json.NewEncoder(conn).Encode(cfg.hello())
		bufio.NewReader(conn).ReadString('\n') // the world
		fmt.Println("hanging")
		time.Sleep(time.Hour)
	}
	w, err := Join(cfg)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	b, _ := json.Marshal(w)
	fmt.Println(string(b))
	return 0
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// joinAll runs every config's Join on its own goroutine.
func joinAll(cfgs []Config) ([]*World, []error) {
	worlds := make([]*World, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, c := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worlds[i], errs[i] = Join(c)
		}()
	}
	wg.Wait()
	return worlds, errs
}

// nodes are configs for devices[i] devices on node i, all agreeing.
func nodes(ln net.Listener, devices ...int) []Config {
	cfgs := make([]Config, len(devices))
	for i, d := range devices {
		cfgs[i] = Config{Addr: ln.Addr().String(), NNodes: len(devices), NodeRank: i, LocalDevices: d,
			ModelHash: "sha256:abc", Batch: 64, Timeout: 5 * time.Second,
			Settings: []Setting{{"--lr", "0.01"}, {"--seed", "1"}, {"--loss", "CrossEntropyLoss"}, {"--epochs", "3"}}}
	}
	cfgs[0].Listener = ln
	cfgs[0].Payload = []byte("the unique id")
	return cfgs
}

func TestJoin(t *testing.T) {
	for _, devices := range [][]int{{1}, {2, 2}, {1, 3, 2}} {
		t.Run(fmt.Sprint(devices), func(t *testing.T) {
			worlds, errs := joinAll(nodes(listen(t), devices...))
			first := 0
			for i, w := range worlds {
				if errs[i] != nil {
					t.Fatalf("node %d: %v", i, errs[i])
				}
				want := &World{Devices: devices, Size: sum(devices), NodeRank: i, FirstRank: first,
					Payload: []byte("the unique id"), ModelHash: "sha256:abc", Batch: 64}
				if !reflect.DeepEqual(w, want) {
					t.Errorf("node %d: %+v, want %+v", i, w, want)
				}
				if r := w.Ranks(); len(r) != devices[i] || r[0] != first {
					t.Errorf("node %d: Ranks = %v", i, r)
				}
				first += devices[i]
			}
		})
	}
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// TestMismatch: every node fails with node 0's verdict.
func TestMismatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"model", func(c *Config) { c.ModelHash = "sha256:def" }, "rendezvous: node 2 has model sha256:def, node 0 sha256:abc: every node must train the same model"},
		{"batch", func(c *Config) { c.Batch = 32 }, "rendezvous: node 2 has batch 32, node 0 64"},
		{"nodes", func(c *Config) { c.NNodes = 4 }, "rendezvous: node 2 expects 4 nodes, node 0 3"},
		{"rank", func(c *Config) { c.NodeRank = 1 }, "rendezvous: two nodes say they are node 1 (127.0.0.1:"},
		{"settings", func(c *Config) {
			c.Settings = []Setting{{"--lr", "0.1"}, {"--seed", "1"}, {"--loss", "MSELoss"}, {"--amp", "bf16"}}
		}, "rendezvous: node 2 trains otherwise than node 0: --lr 0.1 (node 0: 0.01), --loss MSELoss (node 0: CrossEntropyLoss), --epochs unset (node 0: 3), --amp bf16 (node 0: unset)"},
		{"hostile settings", func(c *Config) {
			c.Settings = append(c.Settings[:len(c.Settings):len(c.Settings)], Setting{"--x\x1b[2J", strings.Repeat("9", 1000)})
		}, `rendezvous: node 2 trains otherwise than node 0: "--x\x1b[2J" "` + strings.Repeat("9", 80) + `"... (node 0: unset)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := nodes(listen(t), 1, 1, 1)
			tc.change(&cfgs[2])
			// Node 2 comes once node 1 is there, so there is someone to tell.
			node1 := make(chan bool)
			joinedHook = func(n int) {
				if n == 1 {
					close(node1)
				}
			}
			defer func() { joinedHook = nil }()
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for i := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if i == 2 {
						<-node1
					}
					_, errs[i] = Join(cfgs[i])
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
					t.Errorf("node %d: %v, want %q", i, err, tc.want)
				}
			}
		})
	}
}

func TestWrongPort(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close()
	cfg := nodes(ln, 1, 1)[1]
	cfg.Timeout = 400 * time.Millisecond
	start := time.Now()
	_, err := Join(cfg)
	want := "rendezvous: node 1 cannot reach node 0 at " + addr + " within 400ms: "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Join: %v, want %q ... connection refused", err, want)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestMissingNode: node 0 names the node that never came, and tells the
// node that did.
func TestMissingNode(t *testing.T) {
	ln := listen(t)
	cfgs := nodes(ln, 1, 1, 1)
	cfgs[0].Timeout = 400 * time.Millisecond
	_, errs := joinAll(cfgs[:2])
	want := "rendezvous: node 2 did not join node 0 at " + ln.Addr().String() + " within 400ms"
	for i, err := range errs {
		if err == nil || err.Error() != want {
			t.Errorf("node %d: %v, want %q", i, err, want)
		}
	}
}

// start runs the test binary as node cfg.NodeRank; its first output line is
// on the channel.
func start(t *testing.T, cfg Config, hang bool) (*exec.Cmd, <-chan string) {
	t.Helper()
	js, _ := json.Marshal(Config{Addr: cfg.Addr, NNodes: cfg.NNodes, NodeRank: cfg.NodeRank, LocalDevices: cfg.LocalDevices, ModelHash: cfg.ModelHash, Batch: cfg.Batch, Settings: cfg.Settings, Timeout: cfg.Timeout})
	env := []string{"GCOMP_RDZV_NODE=" + string(js)}
	if hang {
		env = append(env, "GCOMP_RDZV_HANG=1")
	}
	return reexec.Start(t, env...)
}

// TestProcesses: nodes 1 and 2 are other processes.
func TestProcesses(t *testing.T) {
	cfgs := nodes(listen(t), 2, 1, 3)
	_, l1 := start(t, cfgs[1], false)
	_, l2 := start(t, cfgs[2], false)
	w0, err := Join(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range []<-chan string{l1, l2} {
		var w World
		line := <-l
		if err := json.Unmarshal([]byte(line), &w); err != nil {
			t.Fatalf("node %d printed %q", i+1, line)
		}
		if w.Size != 6 || w.NodeRank != i+1 || w.FirstRank != []int{2, 3}[i] || string(w.Payload) != "the unique id" {
			t.Errorf("node %d: %+v", i+1, w)
		}
	}
	if w0.Size != 6 || w0.FirstRank != 0 {
		t.Errorf("node 0: %+v", w0)
	}
}

// TestKilledPeer: node 2, another process, is killed after it joined; node 0
// and node 1 (a process too) fail naming it instead of waiting.
func TestKilledPeer(t *testing.T) {
	cfgs := nodes(listen(t), 1, 1, 1)
	_, l1 := start(t, cfgs[1], false)
	c2, l2 := start(t, cfgs[2], true)
	go func() {
		if line := <-l2; line == "hanging" {
			c2.Process.Kill()
		}
	}()
	startT := time.Now()
	_, err := Join(cfgs[0])
	want := "rendezvous: node 2 (127.0.0.1:"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "left before the rendezvous finished") {
		t.Fatalf("node 0: %v, want %q ... left before the rendezvous finished", err, want)
	}
	if line := <-l1; line != "error: "+err.Error() {
		t.Errorf("node 1 printed %q, want %q", line, "error: "+err.Error())
	}
	if d := time.Since(startT); d > 4*time.Second {
		t.Errorf("took %v (the timeout is 5s: the death was not noticed)", d)
	}
}

// Many settings that differ are listed ten at a time.
func TestDifferencesCapped(t *testing.T) {
	var mine, theirs []Setting
	for i := range 25 {
		mine = append(mine, Setting{fmt.Sprintf("--s%d", i), "a"})
		theirs = append(theirs, Setting{fmt.Sprintf("--s%d", i), "b"})
	}
	err := agree(hello{NNodes: 2, LocalDevices: 1, Settings: mine}, hello{NodeRank: 1, NNodes: 2, LocalDevices: 1, Settings: theirs}, nil, make([]*peer, 2))
	want := "rendezvous: node 1 trains otherwise than node 0: --s0 b (node 0: a), --s1 b (node 0: a), --s2 b (node 0: a), --s3 b (node 0: a), --s4 b (node 0: a), --s5 b (node 0: a), --s6 b (node 0: a), --s7 b (node 0: a), --s8 b (node 0: a), --s9 b (node 0: a) and 15 more"
	if err == nil || err.Error() != want {
		t.Errorf("agree: %v\nwant %s", err, want)
	}
}

// TestSilentConnections: connections that say nothing, or half a hello, or something else,
// delay no node: the nodes that come after them join at once. A missing node is named, never
// one that joined behind a silent connection.
func TestSilentConnections(t *testing.T) {
	strays := []string{"", `{"magic":"gcomp-rendezvous-1","node_rank":1`, "GET / HTTP/1.0\r\n\r\n"}
	stray := func(t *testing.T, addr string) {
		for _, say := range strays {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.Write([]byte(say))
		}
	}
	t.Run("join", func(t *testing.T) {
		ln := listen(t)
		cfgs := nodes(ln, 1, 2, 1)
		for i := range cfgs {
			cfgs[i].Timeout, cfgs[i].Handshake = 20*time.Second, 20*time.Second
		}
		stray(t, ln.Addr().String())
		began := time.Now()
		worlds, errs := joinAll(cfgs)
		for i, err := range errs {
			if err != nil || worlds[i].Size != 4 {
				t.Fatalf("node %d: %v", i, err)
			}
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("took %v: the silent connections held the nodes up", d)
		}
	})
	t.Run("missing", func(t *testing.T) {
		ln := listen(t)
		cfgs := nodes(ln, 1, 1, 1)
		cfgs[0].Timeout, cfgs[0].Handshake = time.Second, 10*time.Second
		stray(t, ln.Addr().String())
		_, errs := joinAll(cfgs[:2])
		want := "rendezvous: node 2 did not join node 0 at " + ln.Addr().String() + " within 1s"
		for i, err := range errs {
			if err == nil || err.Error() != want {
				t.Errorf("node %d: %v, want %q", i, err, want)
			}
		}
	})
}

// Node counts past MaxNodes are refused at once (no table of a trillion nodes), and the nodes
// that did not come are listed ten at a time.
func TestNodeCountBounded(t *testing.T) {
	for _, n := range []int{1099511627776, 100000000, 10000000, MaxNodes + 1} {
		cfg := nodes(listen(t), 1)[0]
		cfg.NNodes = n
		_, err := Join(cfg)
		want := fmt.Sprintf("rendezvous: %d nodes: at most 4096", n)
		if err == nil || err.Error() != want {
			t.Errorf("%d nodes: %v, want %q", n, err, want)
		}
	}
	ln := listen(t)
	cfg := nodes(ln, 1)[0]
	cfg.NNodes, cfg.Timeout = MaxNodes, 200*time.Millisecond
	_, err := Join(cfg)
	want := "rendezvous: node 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 4085 more did not join node 0 at " + ln.Addr().String() + " within 200ms"
	if err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
}
