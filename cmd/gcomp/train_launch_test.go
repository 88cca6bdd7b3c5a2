package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

// Two gcomp train processes started as torchrun, Kubernetes' PyTorchJob and Slurm's srun start
// them (no --nnodes, --node-rank or --rendezvous; the launcher's variables faked, node 0 on
// 127.0.0.1) meet, say which variables they used, and train the checkpoint one process trains
// at the same global batch.
func TestTrainLaunchers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts six training processes")
	}
	data := trainFixture(t)
	common := []string{"batched.go", "--data", data, "--optimizer", "sgd", "--lr", "0.1", "--batch", "16", "--device", "sim:0", "--timeout", "60s"}
	runTrain(t, append(common[:len(common)-4:len(common)-4], "--device", "ref", "--save", "one.safetensors")...)
	for _, tc := range []struct {
		name string
		env  func(rank int, port string) []string
		want string // node 1's line
	}{
		{"torchrun", func(rank int, port string) []string {
			return []string{"WORLD_SIZE=2", fmt.Sprintf("RANK=%d", rank), fmt.Sprintf("LOCAL_RANK=%d", rank), "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port}
		}, "gcomp train: node 1 of 2 from the torchrun/PyTorchJob environment (WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT={port}): rendezvous at 127.0.0.1:{port}\n"},
		{"pytorchjob", func(rank int, port string) []string {
			return []string{"WORLD_SIZE=2", fmt.Sprintf("RANK=%d", rank), "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port}
		}, "gcomp train: node 1 of 2 from the torchrun/PyTorchJob environment (WORLD_SIZE=2 RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT={port}): rendezvous at 127.0.0.1:{port}\n"},
		{"slurm", func(rank int, port string) []string {
			return []string{"SLURM_NTASKS=2", fmt.Sprintf("SLURM_PROCID=%d", rank), "SLURM_LOCALID=0", "SLURM_NODELIST=127.0.0.[1-2]", "SLURM_JOB_ID=77", "MASTER_PORT=" + port}
		}, "gcomp train: node 1 of 2 from the Slurm environment (SLURM_NTASKS=2 SLURM_PROCID=1 SLURM_LOCALID=0 SLURM_NODELIST=127.0.0.[1-2] MASTER_PORT={port}): rendezvous at 127.0.0.1:{port}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, port, _ := net.SplitHostPort(freePort(t))
			var nodes []*node
			for r := range 2 {
				nodes = append(nodes, startNodeEnv(t, tc.env(r, port), append(common, "--save", tc.name+".safetensors")...))
			}
			for r, n := range nodes {
				if code := n.wait(); code != 0 {
					t.Fatalf("node %d: exit status %d:\n%s", r, code, n.stderr())
				}
			}
			if want := strings.ReplaceAll(tc.want, "{port}", port); !strings.HasPrefix(nodes[1].stderr(), want) {
				t.Errorf("node 1's stderr:\n%s\nwant it to start with\n%s", nodes[1].stderr(), want)
			}
			if !strings.Contains(nodes[1].stderr(), "ranks 1..1 of 2") {
				t.Errorf("node 1 is not rank 1 of 2:\n%s", nodes[1].stderr())
			}
			sameCheckpoint(t, tc.name+".safetensors", "one.safetensors")
		})
	}
}

// An inconsistent launcher environment is one clear error; any of --nnodes, --node-rank and
// --rendezvous makes gcomp ignore the environment.
func TestTrainLaunchEnvBad(t *testing.T) {
	data := trainFixture(t)
	for _, tc := range []struct {
		env  []string
		args []string
		want string // "" for success
	}{
		{[]string{"WORLD_SIZE=2", "RANK=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1"}, nil,
			`gcomp train: rendezvous: the torchrun/PyTorchJob environment's RANK="2": want a whole number from 0 to 1`},
		{[]string{"WORLD_SIZE=2", "RANK=1", "MASTER_PORT=1"}, nil, "gcomp train: rendezvous: the torchrun/PyTorchJob environment has no MASTER_ADDR"},
		{[]string{"SLURM_NTASKS=2", "SLURM_PROCID=1", "SLURM_NODELIST=n[1-"}, nil, `gcomp train: rendezvous: the Slurm environment's SLURM_NODELIST: "n[1-": "n[1-": a [ without its ]`},
		{[]string{"SLURM_NTASKS=2", "SLURM_PROCID=1", "SLURM_NODELIST=n[1-"}, []string{"--nnodes", "1"}, ""},
		{[]string{"WORLD_SIZE=x"}, []string{"--node-rank", "0"}, ""},
		{[]string{"WORLD_SIZE=1", "RANK=0"}, nil, ""},
	} {
		t.Run(strings.Join(tc.env, " "), func(t *testing.T) {
			for _, v := range tc.env {
				k, val, _ := strings.Cut(v, "=")
				t.Setenv(k, val)
			}
			var out, errb bytes.Buffer
			args := append([]string{"train", "batched.go", "--data", data, "--optimizer", "sgd", "--lr", "0.1", "--limit", "32", "--device", "ref", "--save", "x.safetensors"}, tc.args...)
			code := Main(args, &out, &errb)
			if tc.want == "" {
				if code != 0 {
					t.Errorf("exit %d:\n%s", code, errb.String())
				}
				return
			}
			if code != 1 || strings.TrimSpace(errb.String()) != tc.want {
				t.Errorf("exit %d, stderr %q; want %q", code, errb.String(), tc.want)
			}
			if _, err := os.Stat("x.safetensors"); err == nil {
				t.Error("a checkpoint was written")
			}
		})
	}
}
