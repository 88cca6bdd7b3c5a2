package rendezvous

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
)

// Launch is a process's place in a multi-node run as the launcher that started it tells it in
// the environment: torchrun and Kubernetes' PyTorchJob (WORLD_SIZE, RANK, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT) or Slurm's srun (SLURM_NTASKS, SLURM_PROCID, SLURM_LOCALID,
// SLURM_NODELIST). Every process of the launch is a node of the rendezvous.
type Launch struct {
	// Launcher names what set the environment, for a message: "torchrun/PyTorchJob" or "Slurm".
	Launcher string
	// NNodes, NodeRank and Addr are what --nnodes, --node-rank and --rendezvous would say.
	NNodes, NodeRank int
	Addr             string
	// LocalRank is the process's rank on its machine: which GPU is its own.
	LocalRank int
	// Vars are the variables read, NAME=VALUE, in the order read.
	Vars []string
}

// DefaultPort is the rendezvous port under Slurm when neither MASTER_PORT nor SLURM_JOB_ID says
// one (torch.distributed's default).
const DefaultPort = 29500

// maxHostList bounds SLURM_NODELIST.
const maxHostList = 1 << 20

// FromEnv reads the launcher's variables through lookup (os.LookupEnv): WORLD_SIZE first, as
// torchrun and PyTorchJob set it (torchrun under srun is the launcher of its workers), else
// SLURM_NTASKS. It returns nil when neither is set or the world is one process, and one error
// naming the variable when they are inconsistent.
func FromEnv(lookup func(string) (string, bool)) (*Launch, error) {
	if _, ok := lookup("WORLD_SIZE"); ok {
		return fromTorch(lookup)
	}
	if _, ok := lookup("SLURM_NTASKS"); ok {
		return fromSlurm(lookup)
	}
	return nil, nil
}

// envReader reads variables for one launcher, remembering what it read and its first error.
type envReader struct {
	launcher string
	lookup   func(string) (string, bool)
	vars     []string
	err      error
}

func (r *envReader) str(name string, required bool) string {
	v, ok := r.lookup(name)
	if !ok {
		if required && r.err == nil {
			r.err = fmt.Errorf("rendezvous: the %s environment has no %s", r.launcher, name)
		}
		return ""
	}
	r.vars = append(r.vars, name+"="+v)
	return v
}

// num reads a whole number in [lo, hi]; def when the variable is absent and not required.
func (r *envReader) num(name string, required bool, def, lo, hi int) int {
	_, ok := r.lookup(name)
	if !ok && !required {
		return def
	}
	s := r.str(name, required)
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if ok && (err != nil || n < lo || n > hi) {
		if r.err == nil {
			r.err = fmt.Errorf("rendezvous: the %s environment's %s=%q: want a whole number from %d to %d", r.launcher, name, s, lo, hi)
		}
		return def
	}
	return n
}

// world reads the number of processes (size), this one's rank and its local rank (optional);
// nil for a world of one process or on an error.
func (r *envReader) world(size, rank, local string) *Launch {
	n := r.num(size, true, 1, 1, MaxNodes)
	if r.err != nil || n == 1 {
		return nil
	}
	l := &Launch{Launcher: r.launcher, NNodes: n}
	l.NodeRank = r.num(rank, true, 0, 0, n-1)
	l.LocalRank = r.num(local, false, 0, 0, n-1)
	return l
}

func fromTorch(lookup func(string) (string, bool)) (*Launch, error) {
	r := &envReader{launcher: "torchrun/PyTorchJob", lookup: lookup}
	l := r.world("WORLD_SIZE", "RANK", "LOCAL_RANK")
	if l == nil {
		return nil, r.err
	}
	host := r.str("MASTER_ADDR", true)
	port := r.num("MASTER_PORT", true, 0, 1, 65535)
	if r.err == nil && strings.TrimSpace(host) == "" {
		r.err = fmt.Errorf("rendezvous: the %s environment's MASTER_ADDR is empty", r.launcher)
	}
	// torchrun's agent serves its own store on MASTER_PORT and says so to its workers: node 0
	// listens on the next port.
	if v, _ := lookup("TORCHELASTIC_USE_AGENT_STORE"); strings.EqualFold(v, "true") && r.err == nil {
		r.vars = append(r.vars, "TORCHELASTIC_USE_AGENT_STORE="+v)
		if port++; port > 65535 {
			r.err = fmt.Errorf("rendezvous: the %s environment's MASTER_PORT is taken by torchrun's store and is the last port", r.launcher)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	l.Addr = joinHostPort(strings.TrimSpace(host), port)
	l.Vars = r.vars
	return l, nil
}

func fromSlurm(lookup func(string) (string, bool)) (*Launch, error) {
	r := &envReader{launcher: "Slurm", lookup: lookup}
	l := r.world("SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID")
	if l == nil {
		return nil, r.err
	}
	nodes := r.str("SLURM_NODELIST", true)
	// The port: MASTER_PORT if the job script exports one, else one of 15000..24999 from the
	// job id (two jobs sharing a first host rarely collide), else DefaultPort.
	port := DefaultPort
	if _, ok := lookup("MASTER_PORT"); ok {
		port = r.num("MASTER_PORT", true, 0, 1, 65535)
	} else if _, ok := lookup("SLURM_JOB_ID"); ok {
		port = 15000 + r.num("SLURM_JOB_ID", true, 0, 0, math.MaxInt)%10000
	}
	if r.err != nil {
		return nil, r.err
	}
	host, err := FirstHost(nodes)
	if err != nil {
		return nil, fmt.Errorf("rendezvous: the Slurm environment's SLURM_NODELIST: %v", err)
	}
	l.Addr = joinHostPort(host, port)
	l.Vars = r.vars
	return l, nil
}

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))
}

// FirstHost returns the first host of a Slurm host list, checking the whole list: hosts
// separated by commas, each host's numeric ranges in brackets, zero padding kept
// ("node[01-04,07],gpu5" is node01, node02, node03, node04, node07 and gpu5; "r[1-2]n[3-4]"
// starts with r1n3).
func FirstHost(list string) (string, error) {
	if len(list) > maxHostList {
		return "", fmt.Errorf("%d bytes, more than %d", len(list), maxHostList)
	}
	first := ""
	for i, item := range splitTop(list) {
		host, err := firstOfItem(item)
		if err != nil {
			return "", fmt.Errorf("%s: %v", quoted(list), err)
		}
		if i == 0 {
			first = host
		}
	}
	return first, nil
}

// splitTop splits a host list at the commas outside brackets.
func splitTop(list string) []string {
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(list); i++ {
		switch list[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, list[start:i])
				start = i + 1
			}
		}
	}
	return append(items, list[start:])
}

// firstOfItem checks one item of a host list, "node[01-04,07]-ib", and returns its first host.
func firstOfItem(item string) (string, error) {
	if item == "" {
		return "", fmt.Errorf("an empty host")
	}
	var host strings.Builder
	for rest := item; rest != ""; {
		open := strings.IndexAny(rest, "[]")
		if open < 0 {
			open = len(rest)
		}
		if err := checkName(rest[:open]); err != nil {
			return "", err
		}
		host.WriteString(rest[:open])
		if open == len(rest) {
			break
		}
		if rest[open] == ']' {
			return "", fmt.Errorf("%q: a ] without its [", item)
		}
		end := strings.IndexByte(rest[open:], ']')
		if end < 0 {
			return "", fmt.Errorf("%q: a [ without its ]", item)
		}
		first, err := firstOfRanges(rest[open+1 : open+end])
		if err != nil {
			return "", fmt.Errorf("%q: %v", item, err)
		}
		host.WriteString(first)
		rest = rest[open+end+1:]
	}
	return host.String(), nil
}

// firstOfRanges checks "01-04,07" and returns its first number as written ("01").
func firstOfRanges(s string) (string, error) {
	first := ""
	for i, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !digits(lo) || (isRange && !digits(hi)) {
			return "", fmt.Errorf("[%s]: want numbers and ranges like 01-04", s)
		}
		if isRange {
			a, err1 := strconv.ParseUint(lo, 10, 63)
			b, err2 := strconv.ParseUint(hi, 10, 63)
			if err1 != nil || err2 != nil || a > b {
				return "", fmt.Errorf("[%s]: the range %s is empty or too large", s, r)
			}
		}
		if i == 0 {
			first = lo
		}
	}
	return first, nil
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// checkName accepts the characters of a host name.
func checkName(s string) error {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return fmt.Errorf("%s is not a host name", quoted(s))
		}
	}
	return nil
}

// quoted quotes s for a message, its first 80 bytes if it is longer.
func quoted(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + "..."
	}
	return strconv.Quote(s)
}
