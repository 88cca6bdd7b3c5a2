package collective

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// exchanger carries one rank's part of a collective to the others and brings
// back its result: the hub itself in process, a TCP client elsewhere.
type exchanger interface {
	// exchange contributes data (nil when the rank contributes nothing) to
	// the seq-th collective of rank and returns rank's result.
	exchange(seq uint64, rank int, c call, data []byte) ([]byte, error)
	// leave tells the others that rank is gone, and why.
	leave(rank int, why string)
}

// hub computes every collective of a set of ranks: each rank hands in its
// part of the seq-th collective, the last to arrive computes, and all leave
// with their results. A rank that leaves fails the collectives waiting for
// it and every later one; a collective some rank does not join within the
// timeout fails for all.
type hub struct {
	size    int
	timeout time.Duration

	mu     sync.Mutex
	rounds map[uint64]*round
	failed map[uint64]error // failed collectives some rank has not reached yet
	gone   map[int]string   // rank → why it left
}

type round struct {
	calls   []*call
	data    [][]byte
	arrived int
	fetched int
	done    chan struct{}
	out     [][]byte
	err     error
}

func newHub(size int, timeout time.Duration) *hub {
	return &hub{size: size, timeout: timeout, rounds: map[uint64]*round{}, failed: map[uint64]error{}, gone: map[int]string{}}
}

// goneErr names the ranks that left; h.mu is held.
func (h *hub) goneErr() error {
	if len(h.gone) == 0 {
		return nil
	}
	ranks := make([]int, 0, len(h.gone))
	for r := range h.gone {
		ranks = append(ranks, r)
	}
	slices.Sort(ranks)
	parts := make([]string, len(ranks))
	for i, r := range ranks {
		parts[i] = fmt.Sprintf("rank %d %s", r, h.gone[r])
	}
	return fmt.Errorf("%s", strings.Join(parts, "; "))
}

func (h *hub) exchange(seq uint64, rank int, c call, data []byte) ([]byte, error) {
	h.mu.Lock()
	if err := h.failed[seq]; err != nil {
		h.mu.Unlock()
		return nil, fmt.Errorf("%s #%d: %w", c, seq, err)
	}
	rd := h.rounds[seq]
	if rd == nil {
		rd = &round{calls: make([]*call, h.size), data: make([][]byte, h.size), done: make(chan struct{})}
		h.rounds[seq] = rd
	}
	if rd.calls[rank] != nil {
		h.mu.Unlock()
		return nil, fmt.Errorf("collective #%d: rank %d joined twice", seq, rank)
	}
	rd.calls[rank] = &c
	rd.arrived++
	select {
	case <-rd.done: // failed before this rank arrived
	default:
		rd.data[rank] = data
		if err := h.goneErr(); err != nil {
			h.finish(rd, nil, err)
		} else if rd.arrived == h.size {
			out, err := agree(rd.calls, rd.data)
			h.finish(rd, out, err)
		}
	}
	h.mu.Unlock()

	timer := time.NewTimer(h.timeout)
	defer timer.Stop()
	select {
	case <-rd.done:
	case <-timer.C:
		h.mu.Lock()
		select {
		case <-rd.done:
		default:
			var missing []string
			for r, cl := range rd.calls {
				if cl == nil {
					missing = append(missing, fmt.Sprint(r))
				}
			}
			h.finish(rd, nil, fmt.Errorf("rank %s did not join within %v", strings.Join(missing, ", "), h.timeout))
		}
		h.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if rd.fetched++; rd.fetched == h.size || rd.err != nil && rd.fetched == rd.arrived {
		delete(h.rounds, seq)
		if rd.err != nil && rd.fetched < h.size {
			h.failed[seq] = rd.err // for the ranks still to come
		}
	}
	if rd.err != nil {
		return nil, fmt.Errorf("%s #%d: %w", c, seq, rd.err)
	}
	return rd.out[rank], nil
}

// finish ends a round; h.mu is held.
func (h *hub) finish(rd *round, out [][]byte, err error) {
	rd.out, rd.err = out, err
	rd.data = nil
	close(rd.done)
}

// agree checks that every rank made the same call and computes it.
func agree(calls []*call, data [][]byte) ([][]byte, error) {
	c := *calls[0]
	for r, cl := range calls[1:] {
		if *cl != c {
			return nil, fmt.Errorf("the ranks disagree: rank 0 called %s, rank %d %s", c, r+1, *cl)
		}
	}
	es := int64(c.DType.Size())
	for r, d := range data {
		want := int64(c.sendElems(len(calls))) * es
		if !c.contributes(r) {
			want = 0
		}
		if int64(len(d)) != want {
			return nil, fmt.Errorf("rank %d sent %d bytes, want %d", r, len(d), want)
		}
	}
	return compute(c, len(calls), data), nil
}

func (h *hub) leave(rank int, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.gone[rank]; ok {
		return
	}
	h.gone[rank] = why
	err := h.goneErr()
	for _, rd := range h.rounds {
		select {
		case <-rd.done:
		default:
			h.finish(rd, nil, err)
		}
	}
}
