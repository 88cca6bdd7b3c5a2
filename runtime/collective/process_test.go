package collective

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gcomp/gcomp/internal/reexec"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/rendezvous"
	"github.com/gcomp/gcomp/runtime/simdev"
)

// The test binary re-executed as node GCOMP_COLL_NODE of a rehearsal: it
// meets node 0 at the rendezvous GCOMP_COLL_RDZV, joins the simulated
// collective at the address node 0 published there, all-reduces [rank+1,
// 10·(rank+1)] and prints the result (or "error: ..."). With GCOMP_COLL_HANG
// it joins and then waits to be killed instead of all-reducing.
func TestMain(m *testing.M) {
	if node := os.Getenv("GCOMP_COLL_NODE"); node != "" {
		os.Exit(childNode(node))
	}
	os.Exit(m.Run())
}

func childNode(node string) int {
	rank, _ := strconv.Atoi(node)
	nodes, _ := strconv.Atoi(os.Getenv("GCOMP_COLL_NODES"))
	fail := func(err error) int { fmt.Println("error:", err); return 1 }
	w, err := rendezvous.Join(rendezvous.Config{Addr: os.Getenv("GCOMP_COLL_RDZV"), NNodes: nodes, NodeRank: rank,
		LocalDevices: 1, ModelHash: "m", Batch: 8, Timeout: 20 * time.Second})
	if err != nil {
		return fail(err)
	}
	dev := simdev.New(simdev.Options{})
	c, err := DialTCP(string(w.Payload), w.FirstRank, w.Size, dev, Options{Timeout: 20 * time.Second})
	if err != nil {
		return fail(err)
	}
	if os.Getenv("GCOMP_COLL_HANG") != "" {
		fmt.Println("joined")
		time.Sleep(time.Hour)
	}
	out, err := allReduceOnce(dev, c)
	if err != nil {
		return fail(err)
	}
	fmt.Println(out)
	return 0
}

// allReduceOnce sums [rank+1, 10·(rank+1)] over the ranks and formats the result.
func allReduceOnce(dev *simdev.Device, c Comm) (string, error) {
	r := float64(c.Rank() + 1)
	b := encode(ir.F32, []float64{r, 10 * r})
	p, err := dev.Alloc(8)
	if err != nil {
		return "", err
	}
	if err := dev.Write(p, b); err != nil {
		return "", err
	}
	if err := c.AllReduce(p, p, 2, ir.F32, Sum, 0); err != nil {
		return "", err
	}
	if err := c.Wait(); err != nil {
		return "", err
	}
	if err := dev.Read(b, p); err != nil {
		return "", err
	}
	return fmt.Sprint(decode(ir.F32, b)), nil
}

// node0 starts nodes 1..n−1 as processes (hang: the last one joins and
// hangs), meets them at the rendezvous, publishing the collective's address,
// and serves rank 0.
func node0(t *testing.T, n int, hang bool, timeout time.Duration) (Comm, *simdev.Device, []*exec.Cmd, []<-chan string) {
	t.Helper()
	rdzv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hub, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var lines []<-chan string
	for node := 1; node < n; node++ {
		env := []string{"GCOMP_COLL_NODE=" + strconv.Itoa(node), "GCOMP_COLL_NODES=" + strconv.Itoa(n), "GCOMP_COLL_RDZV=" + rdzv.Addr().String()}
		if hang && node == n-1 {
			env = append(env, "GCOMP_COLL_HANG=1")
		}
		cmd, l := reexec.Start(t, env...)
		cmds, lines = append(cmds, cmd), append(lines, l)
	}
	w, err := rendezvous.Join(rendezvous.Config{Listener: rdzv, NNodes: n, LocalDevices: 1, ModelHash: "m", Batch: 8,
		Payload: []byte(hub.Addr().String()), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dev := simdev.New(simdev.Options{})
	c, err := ServeTCP(hub, w.Size, dev, Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c, dev, cmds, lines
}

// TestProcesses rehearses a multi-node run: two and three processes meet at
// the rendezvous, join the simulated collective over loopback TCP and
// all-reduce to the same sum.
func TestProcesses(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			c, dev, _, lines := node0(t, n, false, 20*time.Second)
			defer c.Close()
			got, err := allReduceOnce(dev, c)
			if err != nil {
				t.Fatal(err)
			}
			sum := float64(n * (n + 1) / 2)
			want := fmt.Sprint([]float64{sum, 10 * sum})
			if got != want {
				t.Errorf("node 0: %s, want %s", got, want)
			}
			for i, l := range lines {
				if line := <-l; line != want {
					t.Errorf("node %d printed %q, want %q", i+1, line, want)
				}
			}
		})
	}
}

// TestKilledProcess: a node killed while the others wait in a collective
// makes them fail naming it, long before the timeout.
func TestKilledProcess(t *testing.T) {
	const timeout = 20 * time.Second
	c, dev, cmds, lines := node0(t, 3, true, timeout)
	defer c.Close()
	if line := <-lines[1]; line != "joined" {
		t.Fatalf("node 2 printed %q", line)
	}
	start := time.Now()
	go func() {
		time.Sleep(200 * time.Millisecond) // let node 0 and node 1 enter the all-reduce
		cmds[1].Process.Kill()
	}()
	_, err := allReduceOnce(dev, c)
	if err == nil || !strings.Contains(err.Error(), "rank 2 lost its connection") {
		t.Errorf("node 0: %v, want rank 2 named", err)
	}
	if line := <-lines[0]; !strings.HasPrefix(line, "error: ") || !strings.Contains(line, "rank 2 lost its connection") {
		t.Errorf("node 1 printed %q, want an error naming rank 2", line)
	}
	if d := time.Since(start); d > timeout/2 {
		t.Errorf("the failure took %v", d)
	}
}
