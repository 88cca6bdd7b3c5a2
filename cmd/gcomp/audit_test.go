package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gcomp/gcomp/tensorio"
)

// gcompFails runs gcomp with args and checks the bad-input contract: exit status 1, one line of
// error on stderr containing want, nothing on stdout, no panic trace. It returns the message.
func gcompFails(t *testing.T, want string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := Main(args, &stdout, &stderr); code != 1 {
		t.Fatalf("gcomp %s: exit status %d, want 1; stderr:\n%s", strings.Join(args, " "), code, stderr.String())
	}
	msg := stderr.String()
	if !strings.Contains(msg, want) {
		t.Errorf("gcomp %s: stderr = %q, want it to contain %q", strings.Join(args, " "), msg, want)
	}
	if strings.Count(strings.TrimSpace(msg), "\n") != 0 {
		t.Errorf("gcomp %s: want one line of error, got:\n%s", strings.Join(args, " "), msg)
	}
	if stdout.Len() > 0 {
		t.Errorf("gcomp %s: a failing command printed to stdout:\n%s", strings.Join(args, " "), stdout.String())
	}
	if strings.Contains(msg, "goroutine ") || strings.Contains(msg, "panic:") {
		t.Errorf("gcomp %s: stderr shows a panic:\n%s", strings.Join(args, " "), msg)
	}
	return msg
}

// gcompOK runs gcomp with args and fails the test unless it succeeds.
func gcompOK(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := Main(args, &stdout, &stderr); code != 0 {
		t.Fatalf("gcomp %s: exit status %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

// listFiles returns every path under dir (relative to it), sorted, to show that a failing command
// wrote nothing.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		paths = append(paths, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// A hand-edited launch plan whose output names leave the output directory is refused at load,
// and nothing is written anywhere.
func TestAuditPlanNamesArePaths(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	if err := os.MkdirAll("a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	gcompOK(t, "build", "model.go", "-o", "a/b/m.ptx")
	plan, err := os.ReadFile("a/b/m.plan.json")
	if err != nil {
		t.Fatal(err)
	}
	orig := "\"output_names\": [\n    \"y\""
	if !bytes.Contains(plan, []byte(orig)) {
		t.Fatalf("the plan has no %q:\n%s", orig, plan)
	}
	for _, name := range []string{"../../x", "/tmp/x", "..", "", `y\u0007`, "a/b"} {
		edited := bytes.Replace(plan, []byte(orig), []byte("\"output_names\": [\n    \""+name+"\""), 1)
		if err := os.WriteFile("a/b/m.plan.json", edited, 0o644); err != nil {
			t.Fatal(err)
		}
		before := listFiles(t, ".")
		gcompFails(t, "a/b/m.plan.json: output name:", "run", "a/b/m.ptx", "--device", "sim", "--output-dir", "a/b/out")
		gcompFails(t, "a/b/m.plan.json: output name:", "check", "a/b/m.ptx")
		if after := listFiles(t, "."); strings.Join(after, "\n") != strings.Join(before, "\n") {
			t.Errorf("output name %q: files before %v, after %v", name, before, after)
		}
	}
}

// -o naming a symbolic link writes its target and keeps the link; -o naming a character device
// writes into the device and leaves it a device; -o naming a directory is one clean error.
func TestAuditOutputThroughLinksAndDevices(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	if err := os.Symlink("real.safetensors", "w.link"); err != nil {
		t.Fatal(err)
	}
	gcompOK(t, "init-weights", "model.go", "-o", "w.link")
	if st, err := os.Lstat("w.link"); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("w.link is no longer a symbolic link (%v)", err)
	}
	if _, err := os.Stat("real.safetensors"); err != nil {
		t.Errorf("the link's target was not written: %v", err)
	}
	if st, err := os.Stat("/dev/null"); err == nil && st.Mode()&os.ModeCharDevice != 0 {
		gcompOK(t, "init-weights", "model.go", "-o", "/dev/null")
		gcompOK(t, "build", "model.go", "--emit", "ir", "-o", "/dev/null")
		if st, err := os.Lstat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("/dev/null is no longer a character device (%v)", err)
		}
	}
	os.Mkdir("d.safetensors", 0o755)
	gcompFails(t, "d.safetensors: is a directory", "init-weights", "model.go", "-o", "d.safetensors")
}

// Every destination is checked before any work, and a command's outputs are published together:
// a failing command leaves every file as it was.
func TestAuditOutputsAllOrNothing(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	two := "graph g {\n  input %x : f32[2]\n  %0 = neg(%x) : f32[2]\n  %1 = abs(%x) : f32[2]\n  output a = %0\n  output b = %1\n}\n"
	for name, text := range map[string]string{"two.gir": two, "out/a.npy": "old", "keep.jsonl": "keep\n", "m.ptx": "old"} {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"out/b.npy", "m.plan.json", "ckpt", "out2/inputs/x.npy", "c.png"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile("out3", nil, 0o644)
	os.MkdirAll("out4", 0o755)
	os.WriteFile("out4/inputs", nil, 0o644)
	tests := []struct {
		want string
		args []string
	}{
		{"cannot write out/b.npy: is a directory", []string{"run", "two.gir", "--output-dir", "out"}},
		{"cannot write out/b.npy: is a directory", []string{"run", "two.gir", "--device", "sim", "--output-dir", "out"}},
		{"cannot write out2/inputs/x.npy: is a directory", []string{"run", "model.gir", "--save-inputs", "--output-dir", "out2"}},
		{"out4/inputs is not a directory", []string{"run", "model.gir", "--save-inputs", "--output-dir", "out4"}},
		{"cannot write to out3: it is a file", []string{"run", "model.gir", "--output-dir", "out3"}},
		{"cannot write m.plan.json: is a directory", []string{"build", "model.go", "-o", "m.ptx"}},
		{"cannot write ckpt: is a directory", []string{"train", "model.go", "--log", "keep.jsonl", "--save", "ckpt"}},
		{"cannot write ckpt: is a directory", []string{"init-weights", "model.go", "-o", "ckpt"}},
		{"cannot write c.png: is a directory", []string{"plot", "keep.jsonl", "-o", "c.png"}},
	}
	before := listFiles(t, ".")
	for _, tc := range tests {
		gcompFails(t, tc.want, tc.args...)
	}
	if after := listFiles(t, "."); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("files before %v, after %v", before, after)
	}
	for name, want := range map[string]string{"out/a.npy": "old", "keep.jsonl": "keep\n", "m.ptx": "old"} {
		if got, _ := os.ReadFile(name); string(got) != want {
			t.Errorf("%s = %q after failing commands, want %q", name, got, want)
		}
	}
	// Into an existing directory, the outputs replace what was there, through a symbolic link too.
	os.Remove("out/b.npy")
	os.Symlink("../b.target", "out/b.npy")
	gcompOK(t, "run", "two.gir", "--output-dir", "out", "--save-inputs")
	for _, f := range []string{"out/a.npy", "b.target", "out/inputs/x.npy"} {
		if readNPY(t, f).Len() != 2 {
			t.Errorf("%s is not the output", f)
		}
	}
	if st, err := os.Lstat("out/b.npy"); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("out/b.npy is no longer a symbolic link (%v)", err)
	}
}

// Sizes read from files are checked against the files' real lengths and stated limits before
// anything large is allocated; each refusal is one clear line.
func TestAuditHostileSizes(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	os.WriteFile("iota.gir", []byte("graph g {\n  %0 = iota() {shape=[2000000000], dim=0, dtype=f32} : f32[2000000000]\n  output y = %0\n}\n"), 0o644)
	gcompOK(t, "build", "model.go", "-o", "m.ptx")
	plan, _ := os.ReadFile("m.plan.json")
	var arena []byte
	for _, line := range strings.Split(string(plan), "\n") {
		if strings.Contains(line, `"arena_bytes"`) {
			arena = []byte(line)
		}
	}
	os.WriteFile("m.plan.json", bytes.Replace(plan, arena, []byte(`  "arena_bytes": 8589934592,`), 1), 0o644)
	tests := []struct {
		want string
		args []string
	}{
		{"iota.gir:2: %0 = iota() {dim=0, dtype=f32, shape=[2000000000]} : f32[2000000000]: the reference interpreter would hold 16000000000 bytes, more than its memory budget of 1073741824 bytes",
			[]string{"run", "iota.gir", "--ref-memory", "1GiB", "--output-dir", "out"}},
		{"invalid value \"0\" for flag -ref-memory", []string{"run", "model.gir", "--ref-memory", "0", "--output-dir", "out"}},
		{"m.plan.json: arena_bytes 8589934592 is more than its buffers need", []string{"run", "m.ptx", "--device", "sim", "--output-dir", "out"}},
		{"/dev/zero: not a regular file, and longer than the limit of", []string{"dump", "/dev/zero"}},
		{"tensorio: /dev/zero: ", []string{"run", "model.go", "--weights", "/dev/zero", "--output-dir", "out"}},
		{".: is a directory", []string{"dump", "."}},
	}
	if _, err := os.Stat("/dev/zero"); err != nil {
		tests = tests[:3]
	}
	for _, tc := range tests {
		gcompFails(t, tc.want, tc.args...)
	}
}

// A weights file with 300,000 extra zero-size tensors loads in time linear in their number: each
// is matched against the parameters by content in one lookup (copies of a zero-size parameter are
// tied weights), and the notes and errors name the first few.
func TestAuditManyTiedTensors(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	os.WriteFile("zero.gir", []byte("graph g {\n  input %x : f32[2]\n  param %e : f32[0] {init=\"zeros\"}\n  %0 = neg(%x) : f32[2]\n  output y = %0\n}\n"), 0o644)
	const n = 300_000
	tensors := map[string]*tensorio.Array{"e": {DType: "f32", Shape: []int{0}}}
	for i := range n {
		tensors[fmt.Sprintf("copy%06d", i)] = &tensorio.Array{DType: "f32", Shape: []int{0}}
	}
	if err := tensorio.WriteSafetensorsFile("many.safetensors", tensors, nil); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"run", "zero.gir", "--weights", "many.safetensors", "--input", "x=x.npy", "--output-dir", "out"}, &stdout, &stderr); code != 1 {
		// x.npy is f32[2,3]: the run fails after the weights are bound, which is what is timed here.
		t.Fatalf("exit status %d: %s", code, stderr.String())
	}
	want := "gcomp: many.safetensors: ignoring tied weights: copy000000 (a copy of e), "
	if !strings.HasPrefix(stderr.String(), want) || !strings.Contains(stderr.String(), fmt.Sprintf("and %d more\n", n-10)) {
		t.Errorf("stderr = %.300q", stderr.String())
	}
	tensors = map[string]*tensorio.Array{"e": tensors["e"], "copy": tensors["copy000000"], "odd": {DType: "f32", Shape: []int{0, 1}}}
	if err := tensorio.WriteSafetensorsFile("many.safetensors", tensors, nil); err != nil {
		t.Fatal(err)
	}
	gcompFails(t, "has tensors the model does not declare: odd (model parameters: e)", "run", "zero.gir", "--weights", "many.safetensors", "--output-dir", "out")
}

// failingWriter fails every write, as standard output on a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// Validation gaps: each is one clear error and exit status 1.
func TestAuditValidationGaps(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	os.WriteFile("nan.gir", []byte("graph g {\n  input %x : f32[2]\n  param %w : f32[2] {init=\"normal\", mean=nan, std=-1}\n  %0 = add(%x, %w) : f32[2]\n  output y = %0\n}\n"), 0o644)
	os.Mkdir("x.dir", 0o755)
	gcompFails(t, "parameter w: normal init needs a finite mean and a finite std >= 0, have mean=NaN, std=-1", "run", "nan.gir", "--output-dir", "out")
	os.WriteFile("neg.gir", bytes.Replace(must(os.ReadFile("nan.gir")), []byte("mean=nan"), []byte("mean=0"), 1), 0o644)
	gcompFails(t, "parameter w: normal init needs a finite mean and a finite std >= 0, have mean=0, std=-1", "run", "neg.gir", "--output-dir", "out")
	gcompFails(t, "tensorio: x.dir: is a directory, not a .npy file", "run", "model.go", "--input", "x=x.dir", "--output-dir", "out")
	// Standard output that cannot be written fails the command.
	for _, args := range [][]string{{"build", "model.go", "--stats"}, {"check", "model.go"}, {"dump", "model.gir"}} {
		var stderr bytes.Buffer
		if code := Main(args, failingWriter{}, &stderr); code != 1 {
			t.Errorf("%v to a full disk: exit status %d, want 1", args, code)
		}
		if want := "gcomp " + args[0] + ": writing standard output: no space left on device\n"; stderr.String() != want {
			t.Errorf("%v: stderr = %q, want %q", args, stderr.String(), want)
		}
	}
}

// Model code that never finishes ends at --load-timeout with one line naming the file.
func TestAuditLoadTimeout(t *testing.T) {
	dir := fixture(t)
	t.Chdir(dir)
	os.WriteFile("loop.go", []byte(strings.Replace(linearModel, "x := b.Input", "for {\n\t}\n\tx := b.Input", 1)), 0o644)
	gcompFails(t, "loop.go: building the graph took longer than 200ms", "dump", "loop.go", "--load-timeout", "200ms")
	gcompFails(t, "loop.go: building the graph took longer than 200ms", "build", "loop.go", "--load-timeout", "200ms", "-o", "out.ptx")
	gcompFails(t, `invalid value "1x" for flag -load-memory`, "dump", "model.go", "--load-memory", "1x")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
