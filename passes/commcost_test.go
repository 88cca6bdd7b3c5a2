package passes

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestCommSentBytes(t *testing.T) {
	for _, tc := range []struct {
		ranks int
		want  int64
	}{{1, 0}, {2, 1000}, {4, 1500}, {8, 1750}, {64, 1968}} {
		r, err := CommCost(CommInput{Ranks: tc.ranks, Grads: []Grad{{"w", 600}, {"b", 400}}, ComputeUS: 30})
		if err != nil {
			t.Fatal(err)
		}
		if r.SentBytes != tc.want || r.GradientBytes != 1000 {
			t.Errorf("%d ranks: sent %d of %d, want %d of 1000", tc.ranks, r.SentBytes, r.GradientBytes, tc.want)
		}
		if r.BackwardUS != 20 {
			t.Errorf("backward %v, want two thirds of 30", r.BackwardUS)
		}
		if len(r.Links) != len(CommLinks) {
			t.Fatalf("%d links", len(r.Links))
		}
		if tc.ranks == 1 && (r.Links[0].CommUS != 0 || r.Links[0].StepUS != 30) {
			t.Errorf("one rank communicates: %+v", r.Links[0])
		}
	}
}

// TestCommBuckets: reverse parameter order, DDP's 1 MiB first bucket, then the cap; a bucket is
// ready when backward has produced its share of the gradient bytes.
func TestCommBuckets(t *testing.T) {
	const mib = 1 << 20
	grads := []Grad{{"a", mib / 2}, {"b", mib / 2}, {"c", 30 * mib}, {"d", 10 * mib}, {"e", 20 * mib}}
	for _, tc := range []struct {
		name      string
		capBytes  int64
		want      [][]string
		wantBytes []int64
	}{
		{"ddp", 0, [][]string{{"e"}, {"d", "c"}, {"b", "a"}}, []int64{20 * mib, 40 * mib, mib}},
		{"small cap", 8 * mib, [][]string{{"e"}, {"d"}, {"c"}, {"b", "a"}}, []int64{20 * mib, 10 * mib, 30 * mib, mib}},
		{"one bucket", 100 * mib, [][]string{{"e"}, {"d", "c", "b", "a"}}, []int64{20 * mib, 41 * mib}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := CommCost(CommInput{Ranks: 8, Grads: grads, ComputeUS: 610, BackwardUS: 610, BucketBytes: tc.capBytes})
			if err != nil {
				t.Fatal(err)
			}
			var names [][]string
			var bytes []int64
			for _, b := range r.Buckets {
				names = append(names, b.Params)
				bytes = append(bytes, b.Bytes)
			}
			if !reflect.DeepEqual(names, tc.want) || !reflect.DeepEqual(bytes, tc.wantBytes) {
				t.Errorf("buckets %v %v, want %v %v", names, bytes, tc.want, tc.wantBytes)
			}
			// 61 MiB over 610 µs: 10 µs per MiB.
			if got := r.Buckets[0].ReadyUS; math.Abs(got-200) > 1e-9 {
				t.Errorf("first bucket ready at %v µs, want 200", got)
			}
			if got := r.Buckets[len(r.Buckets)-1].ReadyUS; got != 610 {
				t.Errorf("last bucket ready at %v µs, want the end of backward", got)
			}
		})
	}
}

// TestCommOverlap: on a link of 1 byte/µs with no latency, two ranks all-reduce b bytes in b µs.
func TestCommOverlap(t *testing.T) {
	slow := CommLink{Name: "slow", BytesPerSec: 1e6}
	for _, tc := range []struct {
		name                  string
		grads                 []Grad
		bytesPerSec           float64
		comm, exposed, stepUS float64
		hidden                bool
	}{
		// Bucket [b] ready at 500 ends at 600; [a] ready at 1000 ends at 1100.
		{"keeps up", []Grad{{"a", 100}, {"b", 100}}, 1e6, 200, 100, 1600, true},
		// Each takes 1000 µs: [b] 500→1500, [a] 1500→2500.
		{"falls behind", []Grad{{"a", 100}, {"b", 100}}, 1e5, 2000, 1500, 3000, false},
		// One bucket, ready when backward ends: nothing overlaps.
		{"one bucket", []Grad{{"a", 50}}, 1e6, 50, 50, 1550, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := CommCost(CommInput{Ranks: 2, Grads: tc.grads, ComputeUS: 1500, BackwardUS: 1000, BucketBytes: 100})
			if err != nil {
				t.Fatal(err)
			}
			l := slow
			l.BytesPerSec = tc.bytesPerSec
			got := r.linkCost(l)
			want := CommLinkCost{Link: "slow", CommUS: tc.comm, ExposedUS: tc.exposed, StepUS: tc.stepUS, Hidden: tc.hidden}
			if got != want {
				t.Errorf("%+v, want %+v", got, want)
			}
		})
	}
	// Latency: 2(N−1) steps of HopUS each.
	if got := allReduceUS(0, 8, CommLink{BytesPerSec: 1, HopUS: 2}); got != 28 {
		t.Errorf("latency of 8 ranks at 2 µs a step: %v µs, want 28", got)
	}
}

func TestCommCostErrors(t *testing.T) {
	for _, tc := range []struct {
		in   CommInput
		want string
	}{
		{CommInput{Ranks: 0}, "commcost: 0 ranks"},
		{CommInput{Ranks: 2, Grads: []Grad{{"w", -1}}}, "commcost: gradient w has -1 bytes"},
		{CommInput{Ranks: 2, ComputeUS: -1}, "commcost: negative time or bucket size"},
	} {
		if _, err := CommCost(tc.in); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestCommTable(t *testing.T) {
	r, err := CommCost(CommInput{Ranks: 4, Grads: []Grad{{"w", 4 << 20}}, ComputeUS: 90})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r.WriteTable(&b)
	for _, want := range []string{"4 ranks: 4194304 gradient bytes in 1 buckets, each rank sends 6291456 bytes per step", "NVLink 4 (900 GB/s)", "InfiniBand 400 Gb/s", "hidden behind backward: no"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
