package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

const linearModel = `package lin

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 2, 3)
	w := b.Param("w", ir.T(ir.F32, 3), frontend.Ones())
	b.Output("y", x.Mul(w).Relu())
}
`

const badShapeModel = `package lin

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 2, 3)
	w := b.Param("w", ir.T(ir.F32, 4), frontend.Ones())
	b.Output("y", x.Mul(w))
}
`

// fixture writes the files every case may use into a fresh directory.
func fixture(t *testing.T) string {
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("model.go", []byte(linearModel))
	write("shape.go", []byte(badShapeModel))
	write("syntax.go", []byte(strings.Replace(linearModel, "x.Mul(w)", "x.Mul(w", 1)))
	write("unknown.gir", []byte("graph g {\n  input %x : f32[2]\n  %0 = frob(%x) : f32[2]\n  output y = %0\n}\n"))
	write("lone.ptx", []byte(".version 7.8\n"))
	write("other.ptx", []byte(".version 7.8\n"))
	write("other.plan.json", []byte(`{"format": "gcomp-launch-plan", "version": 1, "ptx_sha256": "00", "inputs": [{"name": "x", "type": "f32[2]", "size": 8}], "kernels": [{"name": "k", "grid": [1,1,1], "block": [1,1,1], "args": [{"kind": "input", "name": "x"}]}]}`))
	write("badplan.ptx", []byte(".version 7.8\n"))
	write("badplan.plan.json", []byte(`{"format": "gcomp-launch-plan", "version": 1, "kernels": [`))
	write("future.ptx", []byte(".version 7.8\n"))
	write("future.plan.json", []byte(`{"format": "gcomp-launch-plan", "version": 99}`))
	write("model.gir", []byte("graph g {\n  input %x : f32[2,3]\n  param %w : f32[2,3] {init=\"ones\"}\n  %0 = add(%x, %w) : f32[2,3]\n  output y = %0\n}\n"))
	npy := func(name string, ty ir.Type, vals []float64) {
		if err := tensorio.WriteNPYFile(filepath.Join(dir, name), tensor.FromFloats(ty, vals).Array()); err != nil {
			t.Fatal(err)
		}
	}
	npy("x.npy", ir.T(ir.F32, 2, 3), []float64{1, -2, 3, -4, 5, -6})
	npy("x64.npy", ir.T(ir.F64, 2, 3), []float64{1, 2, 3, 4, 5, 6})
	npy("x23.npy", ir.T(ir.F32, 3, 2), []float64{1, 2, 3, 4, 5, 6})
	st := func(name string, tensors map[string]*tensorio.Array) {
		if err := tensorio.WriteSafetensorsFile(filepath.Join(dir, name), tensors, nil); err != nil {
			t.Fatal(err)
		}
	}
	st("w.safetensors", map[string]*tensorio.Array{"w": tensor.FromFloats(ir.T(ir.F32, 3), []float64{2, 2, 2}).Array()})
	st("w4.safetensors", map[string]*tensorio.Array{"w": tensor.FromFloats(ir.T(ir.F32, 4), []float64{2, 2, 2, 2}).Array()})
	st("wextra.safetensors", map[string]*tensorio.Array{"w": tensor.FromFloats(ir.T(ir.F32, 3), []float64{2, 2, 2}).Array(),
		"v": tensor.FromFloats(ir.T(ir.F32, 1), []float64{1}).Array()})
	st("empty.safetensors", map[string]*tensorio.Array{})
	st("wshifted.safetensors", map[string]*tensorio.Array{"v": tensor.FromFloats(ir.T(ir.F32, 3), []float64{2, 2, 2}).Array(),
		"u": tensor.FromFloats(ir.T(ir.F32, 1), []float64{1}).Array()})
	st("wtied.safetensors", map[string]*tensorio.Array{"w": tensor.FromFloats(ir.T(ir.F32, 3), []float64{2, 2, 2}).Array(),
		"head.w": tensor.FromFloats(ir.T(ir.F32, 3), []float64{2, 2, 2}).Array()})
	st("wuntied.safetensors", map[string]*tensorio.Array{"w": tensor.FromFloats(ir.T(ir.F32, 3), []float64{2, 2, 2}).Array(),
		"head.w": tensor.FromFloats(ir.T(ir.F32, 3), []float64{2, 2, 3}).Array()})
	st("w64.safetensors", map[string]*tensorio.Array{"w": tensor.FromFloats(ir.T(ir.F64, 3), []float64{2, 2, 2}).Array()})
	good, _ := os.ReadFile(filepath.Join(dir, "w.safetensors"))
	write("trunc.safetensors", good[:len(good)-3])
	// A header that claims more data than the file holds.
	write("corrupt.safetensors", bytes.Replace(good, []byte(`"data_offsets":[0,12]`), []byte(`"data_offsets":[0,1200]`), 1))
	write("typeerr.go", []byte(strings.Replace(linearModel, "x.Mul(w)", "x.Mul(3)", 1)))
	write("idx.go", []byte("package toy\n\nimport \"github.com/gcomp/gcomp/frontend\"\n\nfunc Model(b *frontend.Builder) {\n\tx := b.Input(\"x\", frontend.F32, 2)\n\ts := []int{1, 2, 3}\n\t_ = s[3]\n\tb.Output(\"y\", x)\n}\n"))
	write("rec.go", []byte("package toy\n\nimport \"github.com/gcomp/gcomp/frontend\"\n\nfunc depth(n int) int {\n\treturn depth(n+1) + 1\n}\n\nfunc Model(b *frontend.Builder) {\n\tx := b.Input(\"x\", frontend.F32, 2)\n\t_ = depth(0)\n\tb.Output(\"y\", x)\n}\n"))
	write("big.go", []byte("package toy\n\nimport \"github.com/gcomp/gcomp/frontend\"\n\nfunc Model(b *frontend.Builder) {\n\tx := b.Input(\"x\", frontend.F32, 100000, 100000)\n\tb.Output(\"y\", x.Relu())\n}\n"))
	write("huge.gir", []byte("graph g {\n  input %x : f32[4611686018427387904,4]\n  output y = %x\n}\n"))
	write("noout.gir", []byte("graph g {\n  input %x : f32[2]\n}\n"))
	goodNPY, _ := os.ReadFile(filepath.Join(dir, "x.npy"))
	write("corrupt.npy", append([]byte("NOTNUMPY"), goodNPY[8:]...))
	write("trunc.npy", goodNPY[:len(goodNPY)-5])
	return dir
}

func TestBadInput(t *testing.T) {
	dir := fixture(t)
	tests := []struct {
		name string
		args []string
		want string // substring of the single error message
	}{
		{"no command", nil, ""},
		{"unknown command", []string{"frob"}, `unknown command "frob"`},
		{"unknown flag", []string{"build", "model.go", "--frob"}, "flag provided but not defined: -frob"},
		{"missing file", []string{"dump", "none.go"}, "none.go: no such file"},
		{"two models", []string{"dump", "model.go", "model.gir"}, "want one model file"},
		{"syntax error", []string{"build", "syntax.go", "--emit", "ir", "-o", "out.gir"}, "syntax.go:11:"},
		{"shape error", []string{"build", "shape.go", "--emit", "ir", "-o", "out.gir"}, "shape.go:11: mul: shapes cannot be broadcast together"},
		{"unknown op", []string{"build", "unknown.gir", "--emit", "ir", "-o", "out.gir"}, `unknown.gir:3: %0 = frob(%x) : f32[2]: unknown op "frob"`},
		{"bad target", []string{"build", "model.go", "--target", "sm_75", "-o", "out.ptx"}, "--target sm_75 is not supported"},
		{"malformed target", []string{"build", "model.go", "--target", "hopper", "-o", "out.ptx"}, `--target "hopper": want sm_80`},
		{"ptx without plan", []string{"run", "lone.ptx", "--device", "sim", "--output-dir", "out"}, "lone.ptx has no launch plan beside it (lone.plan.json)"},
		{"plan for another module", []string{"run", "other.ptx", "--device", "sim", "--output-dir", "out"}, "other.plan.json was not made for other.ptx"},
		{"corrupt plan", []string{"run", "badplan.ptx", "--device", "sim", "--output-dir", "out"}, "badplan.plan.json: not a launch plan"},
		{"future plan", []string{"check", "future.ptx"}, "launch plan version 99; this gcomp reads versions 1 to 5"},
		{"check bad model", []string{"check", "shape.go"}, "shape.go:11:"},
		{"bench on ref", []string{"run", "model.go", "--device", "ref", "--bench", "3", "--output-dir", "out"}, "--bench wants N > 0 and a compiled device"},
		{"cuda without driver", []string{"run", "model.go", "--device", "cuda", "--cuda-lib", "/nonexistent/libcuda.so.1", "--output-dir", "out"}, "gcomp run: device cuda:0: no CUDA driver library (libcuda.so.1) found: /nonexistent/libcuda.so.1"},
		{"bad gpu number", []string{"run", "model.go", "--device", "cuda:x", "--output-dir", "out"}, `unknown device "cuda:x"`},
		{"unknown pass", []string{"build", "model.go", "--emit", "plan", "--disable-pass", "frob", "-o", "out.gir"}, `--disable-pass: unknown pass "frob"`},
		{"required pass", []string{"build", "model.go", "--stats", "--disable-pass", "memplan"}, "pass memplan is required"},
		{"unknown dump", []string{"build", "model.go", "--stats", "--dump-after", "frob"}, `--dump-after: unknown pass "frob"`},
		{"bad stats", []string{"build", "model.go", "--stats=xml"}, "want --stats or --stats=json"},
		{"bad emit", []string{"build", "model.go", "--emit", "frob"}, `unknown --emit "frob"`},
		{"stats and emit to stdout", []string{"build", "model.go", "--emit", "kernels", "--stats"}, "with --stats, give -o FILE for the --emit output"},
		{"save inputs without output dir", []string{"run", "model.go", "--save-inputs"}, "--save-inputs writes into --output-dir DIR: give one"},
		{"bad device", []string{"run", "model.go", "--device", "tpu", "--output-dir", "out"}, `unknown device "tpu"`},
		{"wrong dtype input", []string{"run", "model.go", "--input", "x=x64.npy", "--output-dir", "out"}, "input x: x64.npy holds f64[2,3], the model wants f32[2,3]"},
		{"wrong shape input", []string{"run", "model.go", "--input", "x=x23.npy", "--output-dir", "out"}, "holds f32[3,2], the model wants f32[2,3]"},
		{"unknown input", []string{"run", "model.go", "--input", "z=x.npy", "--output-dir", "out"}, `the model has no input "z" (inputs: x)`},
		{"bad input spec", []string{"run", "model.go", "--input", "x.npy", "--output-dir", "out"}, "want NAME=FILE.npy"},
		{"corrupt npy", []string{"run", "model.go", "--input", "x=corrupt.npy", "--output-dir", "out"}, "corrupt.npy"},
		{"truncated npy", []string{"run", "model.go", "--input", "x=trunc.npy", "--output-dir", "out"}, "trunc.npy"},
		{"missing npy", []string{"run", "model.go", "--input", "x=nope.npy", "--output-dir", "out"}, "nope.npy"},
		{"wrong shape weight", []string{"run", "model.go", "--weights", "w4.safetensors", "--output-dir", "out"}, "tensor w is f32[4], the model wants f32[3]"},
		{"missing weight strict", []string{"run", "model.go", "--weights", "empty.safetensors", "--strict", "--output-dir", "out"}, "empty.safetensors does not hold the model's parameters and --strict is set: missing 1: w (f32[3])"},
		{"missing and unexpected strict", []string{"run", "model.go", "--weights", "wshifted.safetensors", "--strict", "--output-dir", "out"}, "wshifted.safetensors does not hold the model's parameters and --strict is set: missing 1: w (f32[3]); unexpected 2: u, v"},
		{"strict without weights", []string{"run", "model.go", "--strict", "--output-dir", "out"}, "no --weights file holds the model's parameters and --strict is set: missing 1: w (f32[3])"},
		{"unexpected weight", []string{"run", "model.go", "--weights", "wextra.safetensors", "--output-dir", "out"}, "has tensors the model does not declare: v"},
		{"different extra weight", []string{"run", "model.go", "--weights", "wuntied.safetensors", "--output-dir", "out"}, "has tensors the model does not declare: head.w"},
		{"truncated safetensors", []string{"run", "model.go", "--weights", "trunc.safetensors", "--output-dir", "out"}, "trunc.safetensors"},
		{"missing weights file", []string{"run", "model.go", "--weights", "none.safetensors", "--output-dir", "out"}, "none.safetensors"},
		{"init-weights needs -o", []string{"init-weights", "model.go"}, "-o FILE is required"},
		{"init-weights bad model", []string{"init-weights", "shape.go", "-o", "out.safetensors"}, "shape.go:11:"},
		{"output dir missing", []string{"build", "model.go", "--emit", "ir", "-o", "nodir/out.gir"}, "directory nodir does not exist"},
		{"wrong dtype weight", []string{"run", "model.go", "--weights", "w64.safetensors", "--output-dir", "out"}, "tensor w is f64[3], the model wants f32[3]"},
		{"corrupt safetensors", []string{"run", "model.go", "--weights", "corrupt.safetensors", "--output-dir", "out"}, "corrupt.safetensors"},
		{"type error", []string{"build", "typeerr.go", "--emit", "ir", "-o", "out.gir"}, "typeerr.go:11:"},
		{"runtime panic", []string{"dump", "idx.go"}, "idx.go:8: panic: runtime error: index out of range"},
		{"recursion", []string{"dump", "rec.go"}, "rec.go:6: calls nested more than 1000 deep (unbounded recursion?)"},
		{"too large", []string{"run", "big.go", "--device", "ref", "--output-dir", "out"}, "big.go:6: input %x : f32[100000,100000]: too large"},
		{"overflowing shape", []string{"run", "huge.gir", "--device", "ref", "--output-dir", "out"}, "huge.gir:2: input %x : f32[4611686018427387904,4]: too large"},
		{"no outputs", []string{"dump", "noout.gir"}, "noout.gir: graph g has no outputs"},
	}
	t.Chdir(dir)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(tc.args, &stdout, &stderr); code != 1 {
				t.Fatalf("exit status %d, want 1; stderr:\n%s", code, stderr.String())
			}
			msg := stderr.String()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("stderr = %q, want it to contain %q", msg, tc.want)
			}
			if tc.want != "" && strings.Count(strings.TrimSpace(msg), "\n") != 0 {
				t.Errorf("want one line of error, got:\n%s", msg)
			}
			if tc.want != "" && stdout.Len() > 0 {
				t.Errorf("a failing command printed to stdout:\n%s", stdout.String())
			}
			if strings.Contains(msg, "goroutine ") || strings.HasPrefix(msg, "panic:") || strings.Contains(msg, "\npanic:") {
				t.Errorf("stderr shows a panic:\n%s", msg)
			}
			for _, f := range []string{"out", "out.gir", "out.ptx", "out.plan.json", "out.safetensors"} {
				if _, err := os.Stat(f); err == nil {
					t.Errorf("%s was written by a failing command", f)
					os.RemoveAll(f)
				}
			}
		})
	}
}

// A bf16 output is written as f32 holding the same values (NumPy has no bfloat16), and said so.
func TestRunBF16Output(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	if err := os.WriteFile("bf16.gir", []byte("graph g {\n  input %x : f32[2,3]\n  %0 = cast(%x) {to=bf16} : bf16[2,3]\n  output y = %0\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"ref", "sim"} {
		var stdout, stderr bytes.Buffer
		if code := Main([]string{"run", "bf16.gir", "--device", dev, "--input", "x=x.npy", "--output-dir", dev}, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: %s", dev, stderr.String())
		}
		if !strings.Contains(stderr.String(), "gcomp: y is bf16[2,3], which NumPy lacks: written as f32 (exactly)") {
			t.Errorf("%s: stderr = %q", dev, stderr.String())
		}
		y := readNPY(t, dev+"/y.npy")
		if y.Type.String() != "f32[2,3]" || y.F[1] != -2 {
			t.Errorf("%s: y = %s %v", dev, y.Type, y.F)
		}
	}
}

// A tied weight saved under both of its names (nanoGPT's lm_head.weight beside
// transformer.wte.weight) loads: the copy is ignored, and said so.
func TestRunTiedWeights(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"run", "model.go", "--weights", "wtied.safetensors", "--strict", "--input", "x=x.npy", "--output-dir", "out"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}
	if want := "gcomp: wtied.safetensors: ignoring tied weights: head.w (a copy of w)\n"; stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
}

func TestRunWritesOutputs(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"run", "model.go", "--device", "ref", "--weights", "w.safetensors", "--input", "x=x.npy", "--output-dir", "out", "--save-inputs"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run failed: %s", stderr.String())
	}
	y := readNPY(t, "out/y.npy")
	want := []float64{2, 0, 6, 0, 10, 0} // relu(x * 2)
	for i, w := range want {
		if y.F[i] != w {
			t.Fatalf("y = %v, want %v", y.F, want)
		}
	}
	if _, err := os.Stat("out/inputs/x.npy"); err != nil {
		t.Errorf("--save-inputs: %v", err)
	}
	// Random inputs and initial weights are announced on stderr and are reproducible.
	stderr.Reset()
	if code := Main([]string{"run", "model.gir", "--output-dir", "r1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("run failed: %s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "input x not given: using seeded random f32[2,3] (seed 0)") {
		t.Errorf("stderr = %q", stderr.String())
	}
	Main([]string{"run", "model.gir", "--output-dir", "r2"}, &stdout, &stderr)
	b1, _ := os.ReadFile("r1/y.npy")
	b2, _ := os.ReadFile("r2/y.npy")
	if !bytes.Equal(b1, b2) || len(b1) == 0 {
		t.Errorf("two runs with the same seed differ")
	}
}

func TestBuildPasses(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"build", "model.go", "--stats=json", "--verify-each", "--timings", "--dump-after", "all"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build --stats=json: %s", stderr.String())
	}
	var stats map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &stats); err != nil {
		t.Fatalf("--stats=json printed %q: %v", stdout.String(), err)
	}
	for _, k := range []string{"kernels", "eager_kernels", "dram_bytes", "eager_dram_bytes", "ideal_dram_bytes", "flops",
		"arena_bytes", "naive_bytes", "lower_bound_bytes", "modeled_time_us"} {
		if _, ok := stats[k]; !ok {
			t.Errorf("--stats=json lacks %s", k)
		}
	}
	for _, want := range []string{"// after fuse", "// after memplan", "cse"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q (dump-after all, timings)", want)
		}
	}
	stdout.Reset()
	if code := Main([]string{"build", "model.go", "--emit", "plan", "-o", "plan.json", "--stats"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build --emit plan: %s", stderr.String())
	}
	var plan struct {
		Buffers    []map[string]any `json:"buffers"`
		ArenaBytes *int64           `json:"arena_bytes"`
	}
	data, _ := os.ReadFile("plan.json")
	if err := json.Unmarshal(data, &plan); err != nil || plan.ArenaBytes == nil {
		t.Errorf("plan.json = %s (%v)", data, err)
	}
	if !strings.Contains(stdout.String(), "kernels") {
		t.Errorf("--stats table missing: %q", stdout.String())
	}
}

func TestBuildAndInitWeights(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"build", "model.go", "--emit", "ir", "-o", "m.gir"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build: %s", stderr.String())
	}
	if code := Main([]string{"dump", "m.gir"}, &stdout, &stderr); code != 0 {
		t.Fatalf("dump of the written IR: %s", stderr.String())
	}
	text, _ := os.ReadFile("m.gir")
	if stdout.String() != string(text) {
		t.Errorf("dump(build --emit ir) is not the same text:\n%s\n---\n%s", text, stdout.String())
	}
	stdout.Reset()
	if code := Main([]string{"build", "model.go", "--emit", "dot"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "digraph") {
		t.Fatalf("build --emit dot: %d %s", code, stderr.String())
	}
	if code := Main([]string{"init-weights", "model.go", "-o", "w0.safetensors"}, &stdout, &stderr); code != 0 {
		t.Fatalf("init-weights: %s", stderr.String())
	}
	ts, meta, err := tensorio.ReadSafetensorsFile("w0.safetensors")
	if err != nil || len(ts) != 1 || ts["w"] == nil || meta["format"] != "pt" {
		t.Fatalf("init-weights wrote %v %v %v", ts, meta, err)
	}
	stdout.Reset()
	if code := Main([]string{"help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "init-weights") {
		t.Errorf("help: %d %q", code, stdout.String())
	}
	stdout.Reset()
	if code := Main([]string{"run", "-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "-output-dir") {
		t.Errorf("run -h: %d %q", code, stdout.String())
	}
}

// build writes a module and its plan; run --device sim on the module gives the reference's
// numbers; check passes; a second build writes the same bytes.
func TestBuildRunCheck(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	main := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("gcomp %s: %s", strings.Join(args, " "), stderr.String())
		}
		return stdout.String()
	}
	main("build", "model.go", "-o", "m.ptx")
	ptx1, _ := os.ReadFile("m.ptx")
	plan1, _ := os.ReadFile("m.plan.json")
	if !strings.Contains(string(ptx1), ".visible .entry") || !strings.Contains(string(plan1), `"format": "gcomp-launch-plan"`) {
		t.Fatalf("m.ptx or m.plan.json lacks its content:\n%s\n%s", ptx1, plan1)
	}
	main("build", "model.go", "-o", "m.ptx")
	ptx2, _ := os.ReadFile("m.ptx")
	plan2, _ := os.ReadFile("m.plan.json")
	if !bytes.Equal(ptx1, ptx2) || !bytes.Equal(plan1, plan2) {
		t.Error("two builds of the same model differ")
	}
	if out := main("build", "model.go"); out != string(ptx1) {
		t.Error("build without -o does not print the module")
	}
	main("run", "m.ptx", "--device", "sim", "--output-dir", "sim", "--seed", "3")
	main("run", "m.ptx", "--device", "ref", "--output-dir", "ref", "--seed", "3")
	if out := main("run", "m.ptx", "--device", "sim", "--bench", "2", "--output-dir", "bench"); !strings.Contains(out, "median ms") || !strings.Contains(out, "per run") || !strings.Contains(out, "k0_") {
		t.Errorf("--bench printed:\n%s", out)
	}
	main("run", "model.go", "--device", "ref", "--output-dir", "src", "--seed", "3")
	sim, ref, src := readNPY(t, "sim/y.npy"), readNPY(t, "ref/y.npy"), readNPY(t, "src/y.npy")
	for i := range ref.Len() {
		if sim.At(i) != ref.At(i) || src.At(i) != ref.At(i) {
			t.Fatalf("y[%d]: sim %v, ref of the module %v, ref of the source %v", i, sim.At(i), ref.At(i), src.At(i))
		}
	}
	for _, model := range []string{"m.ptx", "model.go", "model.gir"} {
		if out := main("check", model, "--seed", "5"); !strings.Contains(out, "ok") || !strings.Contains(out, "k0_") {
			t.Errorf("check %s:\n%s", model, out)
		}
	}
}

// readNPY reads a tensor a command wrote.
func readNPY(t *testing.T, path string) *tensor.Tensor {
	t.Helper()
	x, err := tensor.ReadNPYFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// With --tf32, a conv2d runs on tf32 tensor cores, so no kernel notes a fallback to FFMA.
func TestBuildTF32Notes(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	conv := strings.Replace(linearModel, `x := b.Input("x", ir.F32, 2, 3)
	w := b.Param("w", ir.T(ir.F32, 3), frontend.Ones())
	b.Output("y", x.Mul(w).Relu())`, `x := b.Input("x", ir.F32, 1, 2, 5, 5)
	w := b.Param("w", ir.T(ir.F32, 4, 2, 3, 3), frontend.Ones())
	b.Output("y", frontend.Conv2d(x, w, nil, frontend.Conv2dOptions{}))`, 1)
	if err := os.WriteFile("conv.go", []byte(conv), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"build", "conv.go", "--tf32", "--stats"}, {"build", "conv.go", "--tf32", "-o", "conv.ptx"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: %s", args, stderr.String())
		}
		if strings.Contains(stderr.String(), "note:") {
			t.Errorf("%v: stderr = %q", args, stderr.String())
		}
	}
	if ptx, err := os.ReadFile("conv.ptx"); err != nil || !strings.Contains(string(ptx), "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") {
		t.Errorf("conv.ptx has no tf32 mma (%v)", err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"build", "conv.go", "-o", "conv.ptx"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
		t.Errorf("without --tf32: exit %d, stderr %q", code, stderr.String())
	}
}
