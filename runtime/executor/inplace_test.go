package executor_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// A decode step over a cache kept as state: update_slice writes row pos[b] of sequence b, and the
// plan makes new_cache the cache input's own buffer (in_place_of).
const stepGraph = `graph step {
  input %cache : f32[2,5,3]
  input %x : f32[2,T,3]
  input %pos : i64[2]
  %0 = update_slice(%cache, %x, %pos) {axis=1} : f32[2,5,3]
  %1 = reduce_sum(%0) {axes=[1]} : f32[2,3]
  output new_cache = %0
  output s = %1
}
`

func compileStep(t *testing.T, dev executor.Device, T string) *executor.Program {
	t.Helper()
	g, err := ir.Parse("step.gir", []byte(strings.Replace(stepGraph, "2,T,3", "2,"+T+",3", 1)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if in := res.Artifact.Plan.Outputs[0].InPlaceOf; in != "cache" {
		t.Fatalf("new_cache is in place of %q, want cache", in)
	}
	p, err := executor.Load(dev, res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// Feedback of an output written in place of its input moves nothing: no copy, no trade of
// buffers (the cache's address never changes), and the state is right after every run; a second
// program linked to the cache (a prefill) writes its rows into the same buffer.
func TestFeedbackInPlace(t *testing.T) {
	stepDev := &copyCounter{Device: simdev.New(simdev.Options{})}
	decode, prefill := compileStep(t, stepDev, "1"), compileStep(t, stepDev, "2")
	if err := decode.Feedback(map[string]string{"new_cache": "cache"}); err != nil {
		t.Fatal(err)
	}
	cache := tensor.New(ir.T(ir.F32, 2, 5, 3))
	if err := decode.SetState(map[string]*tensor.Tensor{"cache": cache}); err != nil {
		t.Fatal(err)
	}
	if err := prefill.Link("cache", decode, "cache"); err != nil {
		t.Fatal(err)
	}
	if err := prefill.Feedback(map[string]string{"new_cache": "cache"}); err != nil {
		t.Fatal(err)
	}
	addr, _, err := decode.Buffer("cache")
	if err != nil {
		t.Fatal(err)
	}
	before := stepDev.copies
	want := make([]float64, 2*5*3)
	put := func(b, row int, x []float64) {
		copy(want[(b*5+row)*3:], x)
	}
	ints := func(v ...int64) *tensor.Tensor { return &tensor.Tensor{Type: ir.T(ir.I64, len(v)), I: v} }
	// The prompt: rows 0 and 1 of both sequences.
	x := tensor.FromFloats(ir.T(ir.F32, 2, 2, 3), []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	if _, err := prefill.Run(map[string]*tensor.Tensor{"x": x, "pos": ints(0, 0)}); err != nil {
		t.Fatal(err)
	}
	put(0, 0, x.F[0:3])
	put(0, 1, x.F[3:6])
	put(1, 0, x.F[6:9])
	put(1, 1, x.F[9:12])
	// Decode steps, the sequences at different positions, the last one past the end (clamped).
	for step, pos := range [][2]int64{{2, 2}, {3, 2}, {4, 3}, {9, 4}} {
		x := tensor.FromFloats(ir.T(ir.F32, 2, 1, 3), []float64{float64(step), -1, 0.5, 100 + float64(step), 2, -3})
		out, err := decode.Run(map[string]*tensor.Tensor{"x": x, "pos": ints(pos[0], pos[1])})
		if err != nil {
			t.Fatal(err)
		}
		put(0, int(min(pos[0], 4)), x.F[0:3])
		put(1, int(min(pos[1], 4)), x.F[3:6])
		for b := range 2 {
			for j := range 3 {
				var sum float64
				for r := range 5 {
					sum += want[(b*5+r)*3+j]
				}
				if got := out.Outputs["s"].F[b*3+j]; float32(got) != float32(sum) {
					t.Fatalf("step %d: s[%d,%d] = %v, want %v", step, b, j, got, sum)
				}
			}
		}
		if now, _, _ := decode.Buffer("cache"); now != addr {
			t.Fatalf("step %d: the cache moved from %#x to %#x", step, addr, now)
		}
	}
	got, err := decode.Read("cache")
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got.F[i] != want[i] {
			t.Fatalf("cache = %v, want %v", got.F, want)
		}
	}
	if n := stepDev.copies - before; n != 0 {
		t.Errorf("%d device copies, want none", n)
	}
}

// Without Feedback the donated input is still an input: each run writes it from the host and
// returns new_cache.
func TestInPlaceOutputReturned(t *testing.T) {
	p := compileStep(t, simdev.New(simdev.Options{}), "1")
	cache := tensor.New(ir.T(ir.F32, 2, 5, 3))
	for i := range cache.F {
		cache.F[i] = float64(i)
	}
	for run := range 2 {
		x := tensor.FromFloats(ir.T(ir.F32, 2, 1, 3), []float64{-1, -2, -3, -4, -5, -6})
		pos := &tensor.Tensor{Type: ir.T(ir.I64, 2), I: []int64{int64(run), 4}}
		out, err := p.Run(map[string]*tensor.Tensor{"cache": cache, "x": x, "pos": pos})
		if err != nil {
			t.Fatal(err)
		}
		got := out.Outputs["new_cache"]
		for i := range got.F {
			want := float64(i)
			if b, r, j := i/15, i/3%5, i%3; b == 0 && r == run || b == 1 && r == 4 {
				want = x.F[b*3+j]
			}
			if got.F[i] != want {
				t.Fatalf("run %d: new_cache[%d] = %v, want %v", run, i, got.F[i], want)
			}
		}
	}
}
