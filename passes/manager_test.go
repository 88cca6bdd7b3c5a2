package passes

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

const tiny = `
  input %x : f32[2,3]
  param %w : f32[4,3]
  param %b : f32[4]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[2,4]
  %1 = broadcast_in_dim(%b) {dims=[1], shape=[2,4]} : f32[2,4]
  %2 = add(%0, %1) : f32[2,4]
  %3 = relu(%2) : f32[2,4]
  %4 = exp(%3) : f32[2,4]
  %5 = reduce_sum(%4) {axes=[1], keepdims=true} : f32[2,1]
  output y = %3
  output s = %5`

func TestPassOrder(t *testing.T) {
	if err := checkOrder(); err != nil {
		t.Fatal(err)
	}
	saved := passes
	defer func() { passes = saved }()
	passes[1], passes[2] = passes[2], passes[1] // dce, fold → fold, dce: allowed
	if err := checkOrder(); err != nil {
		t.Fatalf("swapping unconstrained passes: %v", err)
	}
	passes[3], passes[4] = passes[4], passes[3] // cse before simplify: violates a constraint
	if err := checkOrder(); err == nil || !strings.Contains(err.Error(), "simplify must run before cse") {
		t.Fatalf("got %v, want a violated constraint", err)
	}
}

func TestRunOptions(t *testing.T) {
	g := parse(t, tiny)
	var dump, timings bytes.Buffer
	res, err := Run(g, Options{VerifyEach: true, DumpAfter: "all", DumpTo: &dump, Timings: &timings, DisablePasses: []string{"cse"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"// after dce\ngraph t {", "// after fuse\nkernels t {", "// after memplan\narena ", "// after cost\n"} {
		if !strings.Contains(dump.String(), want) {
			t.Errorf("dump lacks %q:\n%s", want, dump.String())
		}
	}
	if strings.Contains(dump.String(), "after cse") {
		t.Error("dumped after a disabled pass")
	}
	for _, want := range []string{"fuse", "cse  disabled", "total"} {
		if !strings.Contains(timings.String(), want) {
			t.Errorf("timings lack %q:\n%s", want, timings.String())
		}
	}
	if len(res.Timings) != len(passes) || res.Stats == nil || res.Plan == nil || res.Kernels == nil {
		t.Errorf("incomplete result: %+v", res)
	}
	if g.String() != parse(t, tiny).String() {
		t.Error("Run modified its input graph")
	}
	var one bytes.Buffer
	if _, err := Run(g, Options{DumpAfter: "fuse", DumpTo: &one}); err != nil || strings.Count(one.String(), "// after") != 1 {
		t.Errorf("dump after fuse: %v\n%s", err, one.String())
	}
}

func TestRunErrors(t *testing.T) {
	g := parse(t, tiny)
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{DisablePasses: []string{"nope"}}, `unknown pass "nope"`},
		{Options{DisablePasses: []string{"memplan"}}, "pass memplan is required"},
		{Options{DumpAfter: "nope"}, `--dump-after: unknown pass "nope"`},
	} {
		if _, err := Run(g, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.opt, err, tc.want)
		}
	}
}

// A panic inside a pass comes back as an error naming the pass; a pass that breaks the graph
// is caught by the verifier right after it.
func TestPassFailures(t *testing.T) {
	saved := passes
	defer func() { passes = saved }()
	for j := range passes {
		if passes[j].name == "simplify" {
			passes[j].fn = func(*State) error { panic("boom") }
		}
		if passes[j].name == "cse" {
			passes[j].fn = func(st *State) error {
				st.Graph.Values[len(st.Graph.Values)-1].Type.Shape[0] = 99
				return nil
			}
		}
	}
	_, err := Run(parse(t, tiny), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "pass simplify: internal error: boom") {
		t.Errorf("got %v", err)
	}
	_, err = Run(parse(t, tiny), Options{VerifyEach: true, DisablePasses: []string{"simplify"}})
	if err == nil || !strings.HasPrefix(err.Error(), "after pass cse: ") {
		t.Errorf("got %v", err)
	}
}

// Regression: a panic inside a pass used to come back with the Go stack embedded in the error.
// Users get one line; the stack is appended only when GCOMP_TRACE is set.
func TestPanicMessage(t *testing.T) {
	saved := passes
	defer func() { passes = saved }()
	for j := range passes {
		if passes[j].name == "fuse" {
			passes[j].fn = func(*State) error {
				var s []int
				_ = s[len(passes)] // a runtime panic, as a bug in a pass would raise
				return nil
			}
		}
	}
	for _, tc := range []struct {
		trace     string
		wantStack bool
	}{
		{"", false},
		{"1", true},
	} {
		t.Run("GCOMP_TRACE="+tc.trace, func(t *testing.T) {
			t.Setenv(TraceEnv, tc.trace)
			_, err := Run(parse(t, tiny), Options{})
			if err == nil {
				t.Fatal("no error")
			}
			first, rest, multiline := strings.Cut(err.Error(), "\n")
			if want := fmt.Sprintf("pass fuse: internal error: runtime error: index out of range [%d] with length 0", len(passes)); first != want {
				t.Errorf("first line %q, want %q", first, want)
			}
			if multiline != tc.wantStack || tc.wantStack && !strings.Contains(rest, "goroutine") {
				t.Errorf("stack shown %v, want %v:\n%s", multiline, tc.wantStack, err)
			}
		})
	}
}
