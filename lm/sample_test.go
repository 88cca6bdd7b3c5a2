package lm

import (
	"math"
	"strings"
	"testing"
)

func TestSamplingCheck(t *testing.T) {
	for _, tc := range []struct {
		s    Sampling
		want string
	}{
		{Sampling{}, ""},
		{Sampling{Temperature: 0.7, TopK: 40, TopP: 0.9, RepetitionPenalty: 1.1}, ""},
		{Sampling{Temperature: -1}, "temperature"},
		{Sampling{Temperature: math.NaN()}, "temperature"},
		{Sampling{Temperature: math.Inf(1)}, "temperature"},
		{Sampling{TopK: -1}, "top-k"},
		{Sampling{TopP: 1.5}, "top-p"},
		{Sampling{TopP: math.NaN()}, "top-p"},
		{Sampling{RepetitionPenalty: -2}, "repetition penalty"},
	} {
		err := tc.s.Check()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Check() = %v, want %q", tc.s, err, tc.want)
		}
	}
}

func TestGreedy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		logits []float32
		seen   []int
		pen    float64
		want   int
	}{
		{"largest", []float32{1, 3, 2}, nil, 0, 1},
		{"tie takes the lower id", []float32{5, 1, 5}, nil, 0, 0},
		{"NaN never", []float32{float32(math.NaN()), 1, 0}, nil, 0, 1},
		{"-Inf never", []float32{float32(math.Inf(-1)), -5, -6}, nil, 0, 1},
		{"+Inf wins", []float32{1, float32(math.Inf(1)), 2}, nil, 0, 1},
		{"penalty divides a positive logit", []float32{3, 2}, []int{0}, 2, 1},
		{"penalty multiplies a negative logit", []float32{-1, -1.5}, []int{0}, 2, 1},
		{"no penalty at 1", []float32{3, 2}, []int{0}, 1, 0},
	} {
		s, err := NewSampler(Sampling{RepetitionPenalty: tc.pen})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Next(tc.logits, tc.seen); err != nil || got != tc.want {
			t.Errorf("%s: Next = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	s, _ := NewSampler(Sampling{Temperature: 1})
	if _, err := s.Next([]float32{float32(math.NaN()), float32(math.Inf(-1))}, nil); err == nil {
		t.Error("all logits NaN or -Inf: no error")
	}
}

// Draws follow softmax(logits/T) restricted to the top-k and then the top-p set: no token outside
// the set is ever drawn, and each inside is drawn at its renormalized probability (within five
// standard deviations over 40000 draws). The same seed draws the same tokens.
func TestSamplingDistribution(t *testing.T) {
	logits := []float32{2.0, 1.0, 0.5, 3.0, -1.0, 2.5, 0.0, 1.5}
	for _, tc := range []struct {
		name    string
		s       Sampling
		allowed []int // in order of decreasing logit
	}{
		{"temperature", Sampling{Temperature: 0.8}, []int{3, 5, 0, 7, 1, 2, 6, 4}},
		{"top-k 3", Sampling{Temperature: 1, TopK: 3}, []int{3, 5, 0}},
		{"top-p 0.7", Sampling{Temperature: 1, TopP: 0.7}, nil},
		{"top-k 5 and top-p 0.9 at T=2", Sampling{Temperature: 2, TopK: 5, TopP: 0.9}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := expected(logits, tc.s)
			if tc.allowed != nil && len(want) != len(tc.allowed) {
				t.Fatalf("expected set %v, want %v", want, tc.allowed)
			}
			tc.s.Seed = 42
			s, err := NewSampler(tc.s)
			if err != nil {
				t.Fatal(err)
			}
			const n = 40000
			count := map[int]int{}
			var first []int
			for i := range n {
				id, err := s.Next(logits, nil)
				if err != nil {
					t.Fatal(err)
				}
				count[id]++
				if i < 50 {
					first = append(first, id)
				}
			}
			for id, c := range count {
				if _, ok := want[id]; !ok {
					t.Errorf("token %d drawn %d times, outside the allowed set %v", id, c, want)
				}
			}
			for id, p := range want {
				sd := math.Sqrt(n * p * (1 - p))
				if got := float64(count[id]); math.Abs(got-n*p) > 5*sd+1 {
					t.Errorf("token %d drawn %v times, expected %.0f ± %.0f", id, got, n*p, sd)
				}
			}
			again, _ := NewSampler(tc.s)
			for i, w := range first {
				if got, _ := again.Next(logits, nil); got != w {
					t.Fatalf("draw %d with the same seed: %d, first time %d", i, got, w)
				}
			}
		})
	}
}

// expected computes the distribution the options define, independently of Sampler: softmax of
// logits/T over the top k, then the smallest most-likely prefix reaching p, renormalized.
func expected(logits []float32, s Sampling) map[int]float64 {
	type kv struct {
		id int
		l  float64
	}
	var all []kv
	for i, l := range logits {
		all = append(all, kv{i, float64(l)})
	}
	for i := range all { // insertion sort, descending
		for j := i; j > 0 && all[j].l > all[j-1].l; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	if s.TopK > 0 && s.TopK < len(all) {
		all = all[:s.TopK]
	}
	var z float64
	for _, x := range all {
		z += math.Exp(x.l / s.Temperature)
	}
	if s.TopP > 0 && s.TopP < 1 {
		var acc float64
		for i, x := range all {
			acc += math.Exp(x.l/s.Temperature) / z
			if acc >= s.TopP {
				all = all[:i+1]
				break
			}
		}
	}
	out := map[int]float64{}
	z = 0
	for _, x := range all {
		z += math.Exp(x.l / s.Temperature)
	}
	for _, x := range all {
		out[x.id] = math.Exp(x.l/s.Temperature) / z
	}
	return out
}
