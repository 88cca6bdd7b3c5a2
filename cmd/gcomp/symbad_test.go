package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// The bad inputs issue 27 names, from the CLI: two inputs that disagree on a shared dim (on the
// reference, on the simulator from a built module, and on the file), and a .gir whose ranges
// contradict an op (a window that does not fit the smallest size, a size that can be negative).
// Each is one line on stderr naming the input or the op and the expression, exit status 1, and
// nothing written: no output directory, no module, no plan.
func TestSymbolicBadInputsCLI(t *testing.T) {
	t.Chdir(t.TempDir())
	files := map[string]string{
		"two.gir": "graph two {\n  dims { batch in [1,8], seq in [1,16] }\n  input %x : f32[batch,seq]\n  input %y : f32[batch,seq]\n" +
			"  %0 = add(%x, %y) : f32[batch,seq]\n  output z = %0\n}\n",
		"conv.gir": "graph c {\n  dims { seq in [1,16] }\n  input %x : f32[1,1,seq,8]\n  param %w : f32[1,1,3,3] {init=\"zeros\"}\n" +
			"  %0 = conv2d(%x, %w) : f32[1,1,14,6]\n  output z = %0\n}\n",
		"pool.gir": "graph p {\n  dims { seq in [1,16] }\n  input %x : f32[1,1,seq,8]\n" +
			"  %0 = max_pool2d(%x) {kernel=[2,2]} : f32[1,1,8,4]\n  output z = %0\n}\n",
		"slice.gir": "graph s {\n  dims { seq in [1,16] }\n  input %x : f32[seq,4]\n" +
			"  %0 = slice(%x) {start=[2,0], limit=[16,4], stride=[1,1]} : f32[seq-2,4]\n  output z = %0\n}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, shape := range map[string][]int{"a35.npy": {3, 5}, "a34.npy": {3, 4}, "a45.npy": {4, 5}} {
		if err := tensorio.WriteNPYFile(name, tensor.New(ir.T(ir.F32, shape...)).Array()); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"build", "two.gir", "-o", "two.ptx"}, &stdout, &stderr); code != 0 {
		t.Fatalf("build two.gir: %s", stderr.String())
	}
	for _, tc := range []struct{ args, want, unwritten string }{
		{"run two.gir --device ref --input x=a35.npy --input y=a34.npy --output-dir o", "gcomp run: two.gir: inputs disagree on seq: input x's dim 1 is 5, input y's dim 1 is 4", "o"},
		{"run two.ptx --device ref --input x=a35.npy --input y=a45.npy --output-dir o", "gcomp run: two.ptx: inputs disagree on batch: input x's dim 0 is 3, input y's dim 0 is 4", "o"},
		{"run two.ptx --device sim --input x=a35.npy --input y=a34.npy --output-dir o", "gcomp run: two.ptx: inputs disagree on seq: input x's dim 1 is 5, input y's dim 1 is 4", "o"},
		{"check two.ptx --input x=a35.npy --input y=a45.npy", "inputs disagree on batch: input x's dim 0 is 3, input y's dim 0 is 4", ""},
		{"build conv.gir -o c.ptx", "conv.gir:5: %0 = conv2d(%x, %w) : f32[1,1,14,6]: conv2d: output size seq-2 (input seq, window 3, stride 1, padding 0, dilation 1) can be -1", "c.ptx"},
		{"build pool.gir -o p.ptx", "pool.gir:4: %0 = max_pool2d(%x) {kernel=[2,2]} : f32[1,1,8,4]: max_pool2d: output size seq/2 (input seq, window 2, stride 2, padding 0, dilation 1) can be 0", "p.ptx"},
		{"build slice.gir -o s.ptx", "slice.gir:4:", "s.ptx"},
		{"build slice.gir -o s.ptx", "dimension seq-2 can be as small as -1 over the declared dims", "s.plan.json"},
	} {
		stderr.Reset()
		code := Main(strings.Fields(tc.args), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line with %q", tc.args, code, stderr.String(), tc.want)
		}
		if tc.unwritten != "" {
			if _, err := os.Stat(tc.unwritten); err == nil {
				t.Errorf("%s: wrote %s", tc.args, tc.unwritten)
			}
		}
	}
	for _, f := range []string{"c.plan.json", "p.plan.json"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("a refused build wrote %s", f)
		}
	}
}

// The flags that shape a model as it is traced or imported do not apply to a compiled module,
// whose sizes were chosen when it was built: each is one error naming the flag (and the ranges
// of a module with dims), not a run that quietly ignores it.
func TestRunModuleShapeFlags(t *testing.T) {
	t.Chdir(t.TempDir())
	files := map[string]string{
		"d.gir": "graph d {\n  dims { batch in [1,8] }\n  input %x : f32[batch,2]\n  %0 = neg(%x) : f32[batch,2]\n  output y = %0\n}\n",
		"s.gir": "graph s {\n  input %x : f32[3,2]\n  %0 = neg(%x) : f32[3,2]\n  output y = %0\n}\n",
	}
	var stdout, stderr bytes.Buffer
	for name, text := range files {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if code := Main([]string{"build", name, "-o", strings.TrimSuffix(name, ".gir") + ".ptx"}, &stdout, &stderr); code != 0 {
			t.Fatalf("build %s: %s", name, stderr.String())
		}
	}
	if err := tensorio.WriteNPYFile("x.npy", tensor.New(ir.T(ir.F32, 3, 2)).Array()); err != nil {
		t.Fatal(err)
	}
	const dims = "a compiled module's sizes were chosen when it was built (it runs batch in [1,8], at the sizes of its inputs): give inputs of the sizes to run, or build it again with "
	for _, tc := range []struct{ args, want string }{
		{"run d.ptx --max-batch 4", "gcomp: d.ptx: --max-batch: " + dims + "--max-batch"},
		{"run d.ptx --batch 3", "gcomp: d.ptx: --batch: " + dims + "--batch"},
		{"run d.ptx --max-shape x=4x2", "gcomp: d.ptx: --max-shape: " + dims + "--max-shape"},
		{"run d.ptx --shape x=3x2", "gcomp: d.ptx: --shape: " + dims + "--shape"},
		{"run s.ptx --max-batch 4", "gcomp: s.ptx: --max-batch: a compiled module's sizes were chosen when it was built (its shapes are static): build it again with --max-batch"},
		{"run s.ptx --const c=x.npy", "gcomp: s.ptx: --const: a compiled module's sizes were chosen when it was built (its shapes are static): build it again with --const"},
		{"run s.ptx --batch 2", "gcomp: s.ptx: --batch: a compiled module is fixed at the batch it was built at (build it with --batch)"},
		{"run none.ptx --max-shape x=4x2", "gcomp: none.ptx: --max-shape: a compiled module's sizes were chosen when it was built: build it again with --max-shape"},
	} {
		stderr.Reset()
		args := append(strings.Fields(tc.args), "--input", "x=x.npy", "--output-dir", "o")
		code := Main(args, &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line with %q", tc.args, code, stderr.String(), tc.want)
		}
		if _, err := os.Stat("o"); err == nil {
			t.Fatalf("%s: wrote o", tc.args)
		}
	}
	if code := Main([]string{"run", "d.ptx", "--input", "x=x.npy", "--output-dir", "o"}, &stdout, &stderr); code != 0 {
		t.Errorf("run d.ptx: exit %d: %s", code, stderr.String())
	}
}
