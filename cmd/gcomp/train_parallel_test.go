package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// mainEnv makes the test binary run gcomp with these arguments (separated by \x1f) instead of
// the tests: the processes of a multi-process training.
const mainEnv = "GCOMP_TEST_MAIN"

func TestMain(m *testing.M) {
	if args := os.Getenv(mainEnv); args != "" {
		os.Exit(Main(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// sameCheckpoint compares two checkpoints' tensors within the comparison tolerance.
func sameCheckpoint(t *testing.T, gotPath, wantPath string) {
	t.Helper()
	want, _, err := tensorio.ReadSafetensorsFile(wantPath)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := tensorio.ReadSafetensorsFile(gotPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%s holds %d tensors, %s %d", gotPath, len(got), wantPath, len(want))
	}
	for name, wa := range want {
		if got[name] == nil {
			t.Errorf("%s lacks %s", gotPath, name)
			continue
		}
		w, err1 := tensor.FromArray(wa)
		g, err2 := tensor.FromArray(got[name])
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if o := check.Compare(name, g, w, false); !o.Pass() {
			t.Errorf("%s: %s: %d elements differ, first %s", gotPath, name, o.Bad, o.First)
		}
	}
}

// Two simulated GPUs at global batch 16 train the checkpoint one device trains at batch 16 (the
// reference interpreter), within the comparison tolerance; the epoch line reports the global
// batch's loss and accuracy over all 64 images.
func TestTrainParallelSim(t *testing.T) {
	data := trainFixture(t)
	common := []string{"batched.go", "--data", data, "--optimizer", "adam", "--lr", "0.01", "--batch", "16", "--epochs", "1"}
	wantOut, _ := runTrain(t, append(common, "--device", "ref", "--save", "one.safetensors")...)
	gotOut, stderr := runTrain(t, append(common, "--device", "sim:0,sim:1", "--save", "two.safetensors", "--log", "two.jsonl")...)
	if !strings.Contains(stderr, "ranks 0..1 of 2") || !strings.Contains(stderr, "4 steps of 16 (8 per rank)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	sameCheckpoint(t, "two.safetensors", "one.safetensors")
	// "epoch 1/1: train loss L, train accuracy A%, test loss ..." agree but the timing.
	cut := func(s string) string { return s[:strings.LastIndex(s, " (")] }
	if cut(gotOut) != cut(wantOut) {
		t.Errorf("two ranks printed\n%s\none device\n%s", gotOut, wantOut)
	}
	if _, err := os.Stat("two.jsonl"); err != nil {
		t.Errorf("no metrics log: %v", err)
	}
}

// Mistakes in a data-parallel command are one clear line each.
func TestTrainParallelBadInput(t *testing.T) {
	data := trainFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", "sim:0,sim:1,sim:2", "--batch", "16"}, "--batch 16 does not split evenly over 3 ranks"},
		{[]string{"--device", "sim:0,cuda:1"}, "mixes sim and cuda"},
		{[]string{"--device", "sim:0,sim:0"}, "names sim:0 twice"},
		{[]string{"--device", "sim:0", "--nnodes", "2"}, "--rendezvous HOST:PORT (node 0's) is required"},
		{[]string{"--device", "sim:0", "--nnodes", "2", "--node-rank", "2", "--rendezvous", "127.0.0.1:1"}, "--node-rank 2: want one of 0..1"},
		{[]string{"--device", "sim:0", "--rendezvous", "127.0.0.1:1"}, "--rendezvous 127.0.0.1:1 needs --nnodes N and --node-rank R"},
		{[]string{"--device", "sim:0", "--node-rank", "1", "--rendezvous", "127.0.0.1:1"}, "--rendezvous 127.0.0.1:1 needs --nnodes N"},
		{[]string{"--device", "sim:0", "--nnodes", "1099511627776", "--rendezvous", "127.0.0.1:1"}, "--nnodes 1099511627776: at most 4096"},
		{[]string{"--device", "sim:0", "--nnodes", "100000000", "--rendezvous", "127.0.0.1:1"}, "--nnodes 100000000: at most 4096"},
		{[]string{"--device", "sim:0", "--nnodes", "10000000", "--rendezvous", "127.0.0.1:1"}, "--nnodes 10000000: at most 4096"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"train", "batched.go", "--data", data, "--optimizer", "sgd", "--lr", "0.1", "--save", "x.safetensors"}, tc.args...)
		code := Main(args, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), tc.want) || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", tc.args, code, errb.String(), tc.want)
		}
		if _, err := os.Stat("x.safetensors"); err == nil {
			t.Errorf("%v: a checkpoint was written", tc.args)
		}
	}
}

// freePort returns a loopback address no one listens on (as of now).
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// node is one gcomp train process of a multi-process run.
type node struct {
	cmd       *exec.Cmd
	out, errb bytes.Buffer
	done      chan struct{}
	err       error
}

// startNode starts the test binary as gcomp with args, in the current directory; it is killed
// when the test ends or after a minute.
func startNode(t *testing.T, args ...string) *node {
	t.Helper()
	return startNodeEnv(t, nil, args...)
}

// startNodeEnv is startNode with env added to the process's environment.
func startNodeEnv(t *testing.T, env []string, args ...string) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	n := &node{done: make(chan struct{})}
	n.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	n.cmd.Env = append(append(os.Environ(), env...), mainEnv+"="+strings.Join(append([]string{"train"}, args...), "\x1f"))
	n.cmd.Stdout, n.cmd.Stderr = &n.out, &lockedWriter{w: &n.errb}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.err = n.cmd.Wait(); cancel(); close(n.done) }()
	t.Cleanup(func() { n.cmd.Process.Kill(); <-n.done })
	return n
}

// lockedWriter lets a test read what a child wrote so far while it writes.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func (n *node) stderr() string { return n.cmd.Stderr.(*lockedWriter).String() }

// wait waits for the process and returns its exit code.
func (n *node) wait() int {
	<-n.done
	return n.cmd.ProcessState.ExitCode()
}

// Two and three gcomp train processes, one simulated GPU each, meet at node 0's rendezvous on
// 127.0.0.1 and train the checkpoint one process trains at the same global batch; only node 0
// writes the checkpoint.
func TestTrainProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts five training processes")
	}
	data := trainFixture(t)
	for _, tc := range []struct {
		nodes int
		batch string
	}{{2, "16"}, {3, "24"}} {
		t.Run(fmt.Sprint(tc.nodes), func(t *testing.T) {
			common := []string{"batched.go", "--data", data, "--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9", "--batch", tc.batch}
			want := fmt.Sprintf("one%d.safetensors", tc.nodes)
			runTrain(t, append(common, "--device", "ref", "--save", want)...)
			addr := freePort(t)
			got := fmt.Sprintf("nodes%d.safetensors", tc.nodes)
			var nodes []*node
			for r := range tc.nodes {
				nodes = append(nodes, startNode(t, append(common, "--device", "sim:0", "--nnodes", fmt.Sprint(tc.nodes), "--node-rank", fmt.Sprint(r),
					"--rendezvous", addr, "--timeout", "60s", "--save", fmt.Sprintf("node%d-%s", r, got))...))
			}
			for r, n := range nodes {
				if code := n.wait(); code != 0 {
					t.Fatalf("node %d: exit status %d:\n%s", r, code, n.stderr())
				}
			}
			sameCheckpoint(t, "node0-"+got, want)
			for r := 1; r < tc.nodes; r++ {
				if _, err := os.Stat(fmt.Sprintf("node%d-%s", r, got)); err == nil {
					t.Errorf("node %d wrote a checkpoint; rank 0 alone does", r)
				}
			}
		})
	}
}

// A node with another model, a node dialing the wrong port and a node killed while training
// make every node fail with an error that says so, within the timeouts.
func TestTrainProcessesFail(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts training processes")
	}
	data := trainFixture(t)
	common := []string{"--data", data, "--optimizer", "sgd", "--lr", "0.1", "--batch", "16", "--device", "sim:0", "--nnodes", "2", "--save", "x.safetensors"}
	start := func(model string, rank int, addr, timeout string) *node {
		return startNode(t, append([]string{model}, append(common, "--node-rank", fmt.Sprint(rank), "--rendezvous", addr, "--timeout", timeout)...)...)
	}
	t.Run("model", func(t *testing.T) {
		addr := freePort(t)
		n0, n1 := start("batched.go", 0, addr, "20s"), start("tiny.go", 1, addr, "20s")
		for r, n := range []*node{n0, n1} {
			if code := n.wait(); code != 1 || !strings.Contains(n.stderr(), "model") {
				t.Errorf("node %d: exit %d, stderr:\n%s", r, code, n.stderr())
			}
			t.Logf("node %d: %s", r, n.stderr())
		}
	})
	// Nodes told different learning rates, seeds and epochs fail naming each difference.
	t.Run("settings", func(t *testing.T) {
		addr := freePort(t)
		n0 := start("batched.go", 0, addr, "20s")
		n1 := startNode(t, append([]string{"batched.go"}, append(common, "--node-rank", "1", "--rendezvous", addr, "--timeout", "20s",
			"--lr", "0.05", "--seed", "3", "--epochs", "2", "--loss", "nllloss")...)...)
		want := "rendezvous: node 1 trains otherwise than node 0: --lr 0.05 (node 0: 0.1), --loss NLLLoss (node 0: CrossEntropyLoss), --epochs 2 (node 0: 1), --seed 3 (node 0: 0)"
		for r, n := range []*node{n0, n1} {
			if code := n.wait(); code != 1 || !strings.Contains(n.stderr(), want) {
				t.Errorf("node %d: exit %d, stderr:\n%s\nwant %s", r, code, n.stderr(), want)
			}
		}
	})
	t.Run("port", func(t *testing.T) {
		began := time.Now()
		n1 := start("batched.go", 1, freePort(t), "2s")
		if code := n1.wait(); code != 1 || !strings.Contains(n1.stderr(), "rendezvous") {
			t.Errorf("exit %d, stderr:\n%s", code, n1.stderr())
		}
		t.Logf("node 1: %s", n1.stderr())
		if d := time.Since(began); d > 30*time.Second {
			t.Errorf("took %v with a 2 s timeout", d)
		}
	})
	t.Run("killed", func(t *testing.T) {
		addr := freePort(t)
		n0, n1 := start("batched.go", 0, addr, "30s"), start("batched.go", 1, addr, "30s")
		// Kill node 1 once it trains (its start line is out).
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(n1.stderr(), "ranks 1..1 of 2") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		n1.cmd.Process.Kill()
		began := time.Now()
		if code := n0.wait(); code != 1 || !strings.Contains(n0.stderr(), "rank 1") {
			t.Errorf("node 0: exit %d, stderr:\n%s", code, n0.stderr())
		}
		t.Logf("node 0: %s", n0.stderr())
		if d := time.Since(began); d > 45*time.Second {
			t.Errorf("node 0 took %v to notice", d)
		}
	})
}

// --stats of a data-parallel step prints the step's cost at the per-rank batch and the
// all-reduce's: each of 4 ranks sends 2·3/4 of the gradients' bytes (fc1 784×8+8, fc2 8×10+10
// f32: 25480 bytes).
func TestTrainParallelStats(t *testing.T) {
	trainFixture(t)
	out, _ := runTrain(t, "batched.go", "--device", "sim:0,sim:1,sim:2,sim:3", "--batch", "32", "--stats")
	for _, want := range []string{"global batch 32 over 4 ranks (8 per rank)", "4 ranks: 25480 gradient bytes in 1 buckets, each rank sends 38220 bytes per step", "NVLink 4", "InfiniBand 400 Gb/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("--stats lacks %q:\n%s", want, out)
		}
	}
}
