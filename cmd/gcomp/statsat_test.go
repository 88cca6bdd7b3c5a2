package main

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// statsAtGIR is an MLP over batch·seq rows: a GEMM with relu, then a row sum.
const statsAtGIR = `graph s {
  dims { batch in [1,64], seq in [1,8] }
  input %x : f32[batch,seq,256]
  param %w : f32[512,256] {init="zeros"}
  %0 = reshape(%x) {shape=[512,256]} : f32[batch*seq,256]
  %1 = dot_general(%0, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[batch*seq,512]
  %2 = relu(%1) : f32[batch*seq,512]
  %3 = reduce_sum(%2) {axes=[1]} : f32[batch*seq]
  output y = %3
}
`

type sizedStats struct {
	Sizes map[string]int64 `json:"sizes"`
	Stats map[string]any   `json:"stats"`
}

func buildStatsAt(t *testing.T, args ...string) (bound, at sizedStats) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := Main(append([]string{"build", "s.gir", "--stats=json"}, args...), &stdout, &stderr); code != 0 {
		t.Fatalf("build %v: %s", args, stderr.String())
	}
	var r struct{ Bound, At sizedStats }
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("--stats-at printed %q: %v", stdout.String(), err)
	}
	return r.Bound, r.At
}

// gcomp build --stats --stats-at reports the costs at the named sizes beside the bound's: at
// the bound they are the plain report's, at half of it every cost is smaller; a dim not named
// stays at its bound.
func TestBuildStatsAt(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("s.gir", []byte(statsAtGIR), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"build", "s.gir", "--stats=json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build --stats=json: %s", stderr.String())
	}
	var plain map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &plain); err != nil {
		t.Fatal(err)
	}
	bound, at := buildStatsAt(t, "--stats-at", "batch=64", "--stats-at", "seq=8")
	if !reflect.DeepEqual(bound.Stats, plain) || !reflect.DeepEqual(at.Stats, plain) {
		t.Errorf("at the bound:\n%v\n%v\nwant the plain report\n%v", bound.Stats, at.Stats, plain)
	}
	want := map[string]int64{"batch": 64, "seq": 8}
	if !reflect.DeepEqual(bound.Sizes, want) || !reflect.DeepEqual(at.Sizes, want) {
		t.Errorf("sizes %v and %v, want %v", bound.Sizes, at.Sizes, want)
	}
	for _, tc := range []struct {
		args  []string
		sizes map[string]int64
	}{
		{[]string{"--stats-at", "batch=32"}, map[string]int64{"batch": 32, "seq": 8}},
		{[]string{"--stats-at", "seq=4"}, map[string]int64{"batch": 64, "seq": 4}},
		{[]string{"--stats-at", "seq=1", "--stats-at", "batch=1"}, map[string]int64{"batch": 1, "seq": 1}},
	} {
		bound, at := buildStatsAt(t, tc.args...)
		if !reflect.DeepEqual(bound.Stats, plain) {
			t.Errorf("%v: the bound's report changed", tc.args)
		}
		if !reflect.DeepEqual(at.Sizes, tc.sizes) {
			t.Errorf("%v: sizes %v, want %v", tc.args, at.Sizes, tc.sizes)
		}
		for _, k := range []string{"dram_bytes", "flops", "ideal_dram_bytes", "arena_bytes", "modeled_kernel_time_us"} {
			if a, b := at.Stats[k].(float64), plain[k].(float64); !(a < b) || a <= 0 {
				t.Errorf("%v: %s is %v, at the bound %v; want smaller and positive", tc.args, k, a, b)
			}
		}
	}
	// The table labels both reports with their sizes.
	stdout.Reset()
	if code := Main([]string{"build", "s.gir", "--stats", "--stats-at", "batch=32"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build --stats --stats-at: %s", stderr.String())
	}
	out := stdout.String()
	b, a := strings.Index(out, "at the bound (batch=64, seq=8):\n"), strings.Index(out, "\nat batch=32, seq=8:\n")
	if b != 0 || a < 0 || strings.Count(out, "\nDRAM bytes ") != 2 {
		t.Errorf("--stats --stats-at printed\n%s", out)
	}
	// --stats alone labels its one report with the bound's sizes too, once; a static model's
	// report has no label.
	if err := os.WriteFile("static.gir", []byte("graph n {\n  input %x : f32[4,3]\n  %0 = neg(%x) : f32[4,3]\n  output y = %0\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ model, label string }{{"s.gir", "at the bound (batch=64, seq=8):\n"}, {"static.gir", ""}} {
		stdout.Reset()
		if code := Main([]string{"build", tc.model, "--stats"}, &stdout, &stderr); code != 0 {
			t.Fatalf("build %s --stats: %s", tc.model, stderr.String())
		}
		out := stdout.String()
		if !strings.HasPrefix(out, tc.label) || strings.Count(out, "at the bound") != strings.Count(tc.label, "at the bound") || strings.Count(out, "\nDRAM bytes ") != 1 {
			t.Errorf("build %s --stats printed\n%s", tc.model, out)
		}
	}
	// A dim whose range starts at 0: no rows, no flops, the weights still read.
	zero := "graph z {\n  dims { n in [0,8] }\n  input %x : f32[n,4]\n  param %w : f32[3,4] {init=\"zeros\"}\n" +
		"  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[n,3]\n  output y = %0\n}\n"
	if err := os.WriteFile("s.gir", []byte(zero), 0o644); err != nil {
		t.Fatal(err)
	}
	_, at = buildStatsAt(t, "--stats-at", "n=0")
	if at.Stats["flops"].(float64) != 0 || at.Stats["dram_bytes"].(float64) != 3*4*4 {
		t.Errorf("at n=0: flops %v, DRAM bytes %v; want 0 and the weights' 48", at.Stats["flops"], at.Stats["dram_bytes"])
	}
}

// Bad --stats-at values are one error, exit status 1, before any output is written.
func TestBuildStatsAtBad(t *testing.T) {
	t.Chdir(t.TempDir())
	static := "graph st {\n  input %x : f32[4]\n  %0 = neg(%x) : f32[4]\n  output y = %0\n}\n"
	for name, text := range map[string]string{"s.gir": statsAtGIR, "st.gir": static} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ args, want string }{
		{"s.gir --stats --stats-at batch=65", "gcomp build: s.gir: --stats-at batch=65: 65 is outside batch's range [1,64]"},
		{"s.gir --stats --stats-at seq=0", "--stats-at seq=0: 0 is outside seq's range [1,8]"},
		{"s.gir --stats --stats-at seq=-3", "--stats-at seq=-3: -3 is outside seq's range [1,8]"},
		{"s.gir --stats --stats-at heads=2", `--stats-at heads=2: graph s has no dim "heads" (its dims: batch, seq)`},
		{"s.gir --stats --stats-at batch", `--stats-at "batch": want NAME=VALUE`},
		{"s.gir --stats --stats-at batch=1.5", `--stats-at "batch=1.5": want NAME=VALUE`},
		{"s.gir --stats --stats-at =3", `--stats-at "=3": want NAME=VALUE`},
		{"s.gir --stats --stats-at batch=2 --stats-at batch=3", "--stats-at batch=3: dim batch is named twice"},
		{"s.gir --stats-at batch=2", "gcomp build: --stats-at reports costs: give --stats too"},
		{"s.gir --stats --stats-at batch=99 -o m.ptx", "99 is outside batch's range [1,64]"},
		{"st.gir --stats --stats-at batch=2", "--stats-at: graph st declares no dims"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(strings.Fields("build "+tc.args), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 || stdout.Len() > 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
	if _, err := os.Stat("m.ptx"); err == nil {
		t.Errorf("a refused build wrote m.ptx")
	}
}
