package rendezvous

import (
	"reflect"
	"strings"
	"testing"
)

// env is a fake environment: "NAME=VALUE" pairs.
func env(pairs ...string) func(string) (string, bool) {
	m := map[string]string{}
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		m[k] = v
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	torch := []string{"WORLD_SIZE=4", "RANK=2", "LOCAL_RANK=1", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"}
	slurm := []string{"SLURM_NTASKS=8", "SLURM_PROCID=5", "SLURM_LOCALID=1", "SLURM_NODELIST=node[01-04,07],gpu5", "SLURM_JOB_ID=123456"}
	for _, tc := range []struct {
		name string
		env  []string
		want *Launch
	}{
		{"nothing", nil, nil},
		{"one process", []string{"WORLD_SIZE=1", "RANK=0"}, nil},
		{"one slurm task", []string{"SLURM_NTASKS=1"}, nil},
		{"torchrun", torch, &Launch{Launcher: "torchrun/PyTorchJob", NNodes: 4, NodeRank: 2, LocalRank: 1, Addr: "10.0.0.1:29500",
			Vars: []string{"WORLD_SIZE=4", "RANK=2", "LOCAL_RANK=1", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"}}},
		// PyTorchJob sets no LOCAL_RANK: the process's GPU is its first.
		{"pytorchjob", []string{"WORLD_SIZE=2", "RANK=1", "MASTER_ADDR=job-master-0", "MASTER_PORT=23456"},
			&Launch{Launcher: "torchrun/PyTorchJob", NNodes: 2, NodeRank: 1, Addr: "job-master-0:23456",
				Vars: []string{"WORLD_SIZE=2", "RANK=1", "MASTER_ADDR=job-master-0", "MASTER_PORT=23456"}}},
		{"torchrun's agent store", append(torch, "TORCHELASTIC_USE_AGENT_STORE=True"), &Launch{Launcher: "torchrun/PyTorchJob", NNodes: 4, NodeRank: 2, LocalRank: 1, Addr: "10.0.0.1:29501",
			Vars: []string{"WORLD_SIZE=4", "RANK=2", "LOCAL_RANK=1", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500", "TORCHELASTIC_USE_AGENT_STORE=True"}}},
		{"ipv6", []string{"WORLD_SIZE=2", "RANK=0", "MASTER_ADDR=fd00::1", "MASTER_PORT=29500"},
			&Launch{Launcher: "torchrun/PyTorchJob", NNodes: 2, Addr: "[fd00::1]:29500", Vars: []string{"WORLD_SIZE=2", "RANK=0", "MASTER_ADDR=fd00::1", "MASTER_PORT=29500"}}},
		// torchrun started by srun: torchrun's variables are the process's.
		{"torchrun under slurm", append(slurm, torch...), &Launch{Launcher: "torchrun/PyTorchJob", NNodes: 4, NodeRank: 2, LocalRank: 1, Addr: "10.0.0.1:29500",
			Vars: []string{"WORLD_SIZE=4", "RANK=2", "LOCAL_RANK=1", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"}}},
		{"slurm", slurm, &Launch{Launcher: "Slurm", NNodes: 8, NodeRank: 5, LocalRank: 1, Addr: "node01:18456",
			Vars: []string{"SLURM_NTASKS=8", "SLURM_PROCID=5", "SLURM_LOCALID=1", "SLURM_NODELIST=node[01-04,07],gpu5", "SLURM_JOB_ID=123456"}}},
		{"slurm with MASTER_PORT", append(slurm[:4:4], "MASTER_PORT=4000"), &Launch{Launcher: "Slurm", NNodes: 8, NodeRank: 5, LocalRank: 1, Addr: "node01:4000",
			Vars: []string{"SLURM_NTASKS=8", "SLURM_PROCID=5", "SLURM_LOCALID=1", "SLURM_NODELIST=node[01-04,07],gpu5", "MASTER_PORT=4000"}}},
		{"slurm without job id", []string{"SLURM_NTASKS=2", "SLURM_PROCID=0", "SLURM_NODELIST=a"}, &Launch{Launcher: "Slurm", NNodes: 2, Addr: "a:29500",
			Vars: []string{"SLURM_NTASKS=2", "SLURM_PROCID=0", "SLURM_NODELIST=a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromEnv(env(tc.env...))
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("FromEnv = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestFromEnvInconsistent(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"WORLD_SIZE=two"}, `rendezvous: the torchrun/PyTorchJob environment's WORLD_SIZE="two": want a whole number from 1 to 4096`},
		{[]string{"WORLD_SIZE=0"}, `WORLD_SIZE="0": want a whole number from 1 to 4096`},
		{[]string{"WORLD_SIZE=1099511627776"}, `WORLD_SIZE="1099511627776": want a whole number from 1 to 4096`},
		{[]string{"WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=1"}, "rendezvous: the torchrun/PyTorchJob environment has no RANK"},
		{[]string{"WORLD_SIZE=2", "RANK=2", "MASTER_ADDR=h", "MASTER_PORT=1"}, `RANK="2": want a whole number from 0 to 1`},
		{[]string{"WORLD_SIZE=2", "RANK=-1", "MASTER_ADDR=h", "MASTER_PORT=1"}, `RANK="-1": want a whole number from 0 to 1`},
		{[]string{"WORLD_SIZE=2", "RANK=1", "LOCAL_RANK=x", "MASTER_ADDR=h", "MASTER_PORT=1"}, `LOCAL_RANK="x": want a whole number from 0 to 1`},
		{[]string{"WORLD_SIZE=2", "RANK=1", "MASTER_PORT=1"}, "environment has no MASTER_ADDR"},
		{[]string{"WORLD_SIZE=2", "RANK=1", "MASTER_ADDR= ", "MASTER_PORT=1"}, "environment's MASTER_ADDR is empty"},
		{[]string{"WORLD_SIZE=2", "RANK=1", "MASTER_ADDR=h"}, "environment has no MASTER_PORT"},
		{[]string{"WORLD_SIZE=2", "RANK=1", "MASTER_ADDR=h", "MASTER_PORT=70000"}, `MASTER_PORT="70000": want a whole number from 1 to 65535`},
		{[]string{"WORLD_SIZE=2", "RANK=1", "MASTER_ADDR=h", "MASTER_PORT=65535", "TORCHELASTIC_USE_AGENT_STORE=True"}, "MASTER_PORT is taken by torchrun's store and is the last port"},
		{[]string{"SLURM_NTASKS=4", "SLURM_NODELIST=a"}, "rendezvous: the Slurm environment has no SLURM_PROCID"},
		{[]string{"SLURM_NTASKS=4", "SLURM_PROCID=4", "SLURM_NODELIST=a"}, `SLURM_PROCID="4": want a whole number from 0 to 3`},
		{[]string{"SLURM_NTASKS=4", "SLURM_PROCID=1"}, "the Slurm environment has no SLURM_NODELIST"},
		{[]string{"SLURM_NTASKS=4", "SLURM_PROCID=1", "SLURM_NODELIST=node[01-"}, `SLURM_NODELIST: "node[01-": "node[01-": a [ without its ]`},
		{[]string{"SLURM_NTASKS=4", "SLURM_PROCID=1", "SLURM_NODELIST=a", "SLURM_JOB_ID=x"}, `SLURM_JOB_ID="x"`},
		{[]string{"SLURM_NTASKS=5000", "SLURM_PROCID=1"}, `SLURM_NTASKS="5000": want a whole number from 1 to 4096`},
	} {
		got, err := FromEnv(env(tc.env...))
		if err == nil || !strings.Contains(err.Error(), tc.want) || got != nil {
			t.Errorf("%v: %+v, %v; want %q", tc.env, got, err, tc.want)
		}
	}
}

func TestFirstHost(t *testing.T) {
	for _, tc := range []struct{ list, want, err string }{
		{"node[01-04,07],gpu5", "node01", ""},
		{"gpu5,node[01-04]", "gpu5", ""},
		{"a", "a", ""},
		{"r[1-2]n[3-4]", "r1n3", ""},
		{"node[007]-ib,x", "node007-ib", ""},
		{"n[9-10]", "n9", ""},
		{"cn-1.cluster.org", "cn-1.cluster.org", ""},
		{"", "", "an empty host"},
		{"a,,b", "", "an empty host"},
		{"a,", "", "an empty host"},
		{"node[04-01]", "", "the range 04-01 is empty or too large"},
		{"node[1-99999999999999999999]", "", "is empty or too large"},
		{"node[a-b]", "", "want numbers and ranges"},
		{"node[]", "", "want numbers and ranges"},
		{"node[1,]", "", "want numbers and ranges"},
		{"node]1[", "", "a ] without its ["},
		{"node[1", "", "a [ without its ]"},
		{"node[[1]]", "", "want numbers and ranges"},
		{"no de", "", `"no de" is not a host name`},
		{"a;rm", "", "is not a host name"},
		{strings.Repeat("a", 1<<20+1), "", "more than 1048576"},
	} {
		got, err := FirstHost(tc.list)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("FirstHost(%q) = %q, %v; want %q", tc.list, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("FirstHost(%q) = %q, %v; want an error with %q", tc.list, got, err, tc.err)
		}
	}
}
