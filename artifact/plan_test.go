package artifact_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
)

const graph = `graph lin {
  input %x : f32[4,8]
  param %w : f32[8,8] {init="normal"}
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,8]
  %1 = relu(%0) : f32[4,8]
  %2 = exp(%1) : f32[4,8]
  %3 = reduce_sum(%2) {axes=[1]} : f32[4]
  output y = %3
}
`

func compiled(t *testing.T) *artifact.Artifact { return compiledText(t, graph) }

func compiledText(t *testing.T, src string) *artifact.Artifact {
	t.Helper()
	g, err := ir.Parse("model.gir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Artifact
}

func TestWriteRead(t *testing.T) {
	a := compiled(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "lin.ptx")
	if err := a.Write(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "lin.plan.json")); err != nil {
		t.Fatal(err)
	}
	b, err := artifact.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b.PTX) != string(a.PTX) || string(b.Plan.JSON()) != string(a.Plan.JSON()) {
		t.Error("the artifact read back differs from the one written")
	}
	g, err := b.Plan.SourceGraph()
	if err != nil || g.String() != graph {
		t.Errorf("source graph: %v\n%s", err, g)
	}
	// A module edited after the build no longer matches its plan.
	os.WriteFile(path, append(b.PTX, '\n'), 0o644)
	if _, err := artifact.Read(path); err == nil || !strings.Contains(err.Error(), "was not made for") {
		t.Errorf("edited module: err = %v", err)
	}
}

// Every way a plan can be inconsistent is one error that says what is wrong.
func TestParsePlanErrors(t *testing.T) {
	good := string(compiled(t).Plan.JSON())
	tests := []parseCase{
		{"format", `"gcomp-launch-plan"`, `"onnx"`, `not a launch plan (format "onnx"`},
		{"version", `"version": 3`, `"version": 6`, "launch plan version 6"},
		{"unknown field", `"tf32": false`, `"tf32": false, "extra": 1`, `unknown field "extra"`},
		{"amp", `"tf32": false`, `"tf32": false, "amp": "fp8"`, `amp "fp8": want bf16, f16 or none`},
		{"bad type", `"type": "f32[4,8]"`, `"type": "f33[4,8]"`, "bad type"},
		{"size", `"size": 256`, `"size": 255`, "does not match its type"},
		{"unknown arg", `"kind": "param"`, `"kind": "texture"`, `unknown kind "texture"`},
		{"unknown buffer", `"name": "w"`, `"name": "v"`, `no param named "w"`},
		{"grid", `"grid": [`, `"grid": [0, `, "must be positive"},
		// Names become file names (run writes NAME.npy): none may leave the output directory.
		{"output name escapes", "\"output_names\": [\n    \"y\"", "\"output_names\": [\n    \"../../x\"", `output name: name "../../x" cannot name a file: it holds a path separator`},
		{"absolute output name", "\"output_names\": [\n    \"y\"", "\"output_names\": [\n    \"/tmp/x\"", "path separator"},
		{"dot-dot output name", "\"output_names\": [\n    \"y\"", "\"output_names\": [\n    \"..\"", `name ".." cannot name a file`},
		{"empty output name", "\"output_names\": [\n    \"y\"", "\"output_names\": [\n    \"\"", "empty name"},
		{"control character", "\"output_names\": [\n    \"y\"", "\"output_names\": [\n    \"y\\u001b[2J\"", "control character"},
		{"input name escapes", `"name": "x",`, `"name": "../x",`, "input: name"},
		// Sizes are checked before a runtime allocates them, without overflow.
		{"negative scratch", `"scratch_bytes": 0`, `"scratch_bytes": -8`, "scratch_bytes -8 is negative"},
		{"negative arena", `"arena_bytes": 128`, `"arena_bytes": -128`, "arena_bytes -128 is negative"},
		{"huge arena", `"arena_bytes": 128`, `"arena_bytes": 8589934592`, "arena_bytes 8589934592 is more than its buffers need (128)"},
		{"offset near 2^63", `"offset": 0,`, `"offset": 9223372036854775800,`, "lies outside the 128-byte arena"},
		{"size near 2^63", `"size": 128,
      "live_from"`, `"size": 9223372036854775800,
      "live_from"`, "lies outside the 128-byte arena"},
		{"alignment", `"alignment": 256`, `"alignment": 3`, "alignment 3 is not a power of two"},
		{"arena past its alignment", `"arena_bytes": 128`, `"arena_bytes": 257`, "arena_bytes 257 is more than its buffers need (128)"},
		{"offset plus size overflows", `"offset": 0,
      "size": 128,`, `"offset": 64,
      "size": 9223372036854775807,`, "lies outside the 128-byte arena"},
		{"trailing JSON", "\n}\n", "\n}\n{}", "data after the JSON object"},
		{"duplicate input", `"inputs": [`, `"inputs": [{"name": "x", "type": "f32[4,8]", "size": 128},`, `input "x" is declared twice`},
		{"duplicate output name", "\"output_names\": [\n    \"y\"", "\"output_names\": [\n    \"y\", \"y\"", `"y" is declared twice`},
		// Source names (an .onnx model's own) pair any text with an input or output of the plan.
		{"source name of no input", `"tf32": false`, `"tf32": false, "source_names": {"inputs": [["onnx::x", "z"]], "outputs": []}`, `source_names: the plan has no input "z"`},
		{"source name of no output", `"tf32": false`, `"tf32": false, "source_names": {"inputs": [], "outputs": [["4", "x"]]}`, `source_names: the plan has no output "x"`},
		{"empty source name", `"tf32": false`, `"tf32": false, "source_names": {"inputs": [["", "x"]], "outputs": []}`, `input "x" has an empty source name`},
		{"source name twice", `"tf32": false`, `"tf32": false, "source_names": {"inputs": [["a", "x"], ["b", "x"]], "outputs": []}`, `named twice`},
	}
	checkParseErrors(t, good, tests)
	if _, err := artifact.ParsePlan([]byte(good)); err != nil {
		t.Errorf("the compiled plan does not parse: %v", err)
	}
	named := strings.Replace(good, `"tf32": false`, `"tf32": false, "source_names": {"inputs": [["../onnx::x", "x"]], "outputs": [["4", "y"]]}`, 1)
	if p, err := artifact.ParsePlan([]byte(named)); err != nil || p.SourceNames.Outputs[0] != [2]string{"4", "y"} {
		t.Errorf("a plan with source names: %v", err)
	}
	// An arena may be rounded up to the alignment (256 bytes), no further.
	if _, err := artifact.ParsePlan([]byte(strings.Replace(good, `"arena_bytes": 128`, `"arena_bytes": 256`, 1))); err != nil {
		t.Errorf("an arena rounded up to its alignment: %v", err)
	}
}

// checkParseErrors parses good with each case's old text replaced by new, expecting an error
// that contains want.
func checkParseErrors(t *testing.T, good string, tests []parseCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.old) {
				t.Fatalf("the plan has no %q:\n%s", tc.old, good)
			}
			_, err := artifact.ParsePlan([]byte(strings.Replace(good, tc.old, tc.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

type parseCase struct{ name, old, new, want string }

// A version 1 plan (before launches named their entry) still runs: each launch runs the entry of
// its own name, which is what version 1 modules held.
func TestParsePlanVersion1(t *testing.T) {
	good := string(compiled(t).Plan.JSON())
	v1 := regexp.MustCompile(`(?m)^\s*"entry": .*\n`).ReplaceAllString(strings.Replace(good, `"version": 3`, `"version": 1`, 1), "")
	if v1 == good || strings.Contains(v1, `"entry"`) {
		t.Fatalf("could not make a version 1 plan of:\n%s", good)
	}
	p, err := artifact.ParsePlan([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range p.Kernels {
		if k.Entry != k.Name {
			t.Errorf("launch %s runs entry %q, want its own", k.Name, k.Entry)
		}
	}
	p.Kernels[0].Entry = "" // a version 2 or 3 launch must name its entry
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "names no entry") {
		t.Errorf("a launch without an entry: err = %v", err)
	}
}

func FuzzParsePlan(f *testing.F) {
	a := compiled(&testing.T{})
	f.Add(a.Plan.JSON())
	f.Add([]byte(`{"format": "gcomp-launch-plan", "version": 1}`))
	f.Add(variantPlan(&testing.T{}).JSON())
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := artifact.ParsePlan(data)
		if err != nil {
			return
		}
		// A plan that parses validates again after a round trip.
		if _, err := artifact.ParsePlan(p.JSON()); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// A decode step's cache: update_slice writes a row of the input cache, which the plan hands to
// the output new_cache (in_place_of, version 3).
const cacheGraph = `graph step {
  input %cache : f32[2,8,4]
  input %x : f32[2,1,4]
  input %pos : i64[2]
  %0 = update_slice(%cache, %x, %pos) {axis=1} : f32[2,8,4]
  %1 = reduce_sum(%0) {axes=[1]} : f32[2,4]
  %2 = neg(%0) : f32[2,8,4]
  output new_cache = %0
  output s = %1
  output n = %2
}
`

func TestPlanInPlaceOf(t *testing.T) {
	good := string(compiledText(t, cacheGraph).Plan.JSON())
	if !strings.Contains(good, `"in_place_of": "cache"`) {
		t.Fatalf("the output is not in place of its input:\n%s", good)
	}
	p, err := artifact.ParsePlan([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if p.Outputs[0].InPlaceOf != "cache" || p.Outputs[1].InPlaceOf != "" || p.Outputs[2].InPlaceOf != "" {
		t.Errorf("outputs %+v: want new_cache in place of cache, s on its own", p.Outputs)
	}
	checkParseErrors(t, good, []parseCase{
		{"no such input", `"in_place_of": "cache"`, `"in_place_of": "kv"`, `output new_cache is in place of "kv", which is no input of the plan`},
		{"another type", `"in_place_of": "cache"`, `"in_place_of": "x"`, "of another type"},
		{"version 2", `"version": 3`, `"version": 2`, "in_place_of needs plan version 3"},
		{"on an input", `"name": "pos",`, `"name": "pos", "in_place_of": "cache",`, "only an output can be in place of an input"},
		{"twice", `"name": "n",`, `"name": "n", "in_place_of": "cache",`, "are both in place of input cache"},
	})
	// A version 2 plan without aliases still reads.
	if _, err := artifact.ParsePlan([]byte(strings.Replace(string(compiled(t).Plan.JSON()), `"version": 3`, `"version": 2`, 1))); err != nil {
		t.Errorf("a version 2 plan: %v", err)
	}
}
