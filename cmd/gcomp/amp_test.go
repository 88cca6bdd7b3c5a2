package main

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// ampModel is a matmul with a weight and a tanh after it: under --amp the matmul runs in the
// low dtype and the tanh in f32.
const ampModel = `graph mm {
  input %x : f32[4,33]
  param %w : f32[8,33] {init="normal", mean=0.0, std=1.0}
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[1]} : f32[4,8]
  %1 = tanh(%0) : f32[4,8]
  output y = %1
  output z = %0
}
`

// gcompMain runs gcomp with args and returns its exit code, standard output and error.
func gcompMain(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// --amp bf16|f16 on build, run and check: the plan records it, the weight's cast runs when
// weights are bound, the compiled run matches the reference on the same autocast graph, and a
// module run with another --amp than it was built with is an error.
func TestAMP(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("mm.gir", []byte(ampModel), 0o644); err != nil {
		t.Fatal(err)
	}
	must := func(args ...string) string {
		t.Helper()
		code, out, errs := gcompMain(args...)
		if code != 0 {
			t.Fatalf("gcomp %s: exit %d: %s", strings.Join(args, " "), code, errs)
		}
		return out
	}
	for _, dt := range []string{"bf16", "f16"} {
		must("build", "mm.gir", "--amp", dt, "-o", dt+".ptx")
		first, _ := os.ReadFile(dt + ".plan.json")
		must("build", "mm.gir", "--amp", dt, "-o", dt+".ptx")
		if again, _ := os.ReadFile(dt + ".plan.json"); !bytes.Equal(first, again) {
			t.Errorf("%s: two builds differ", dt)
		}
		art, err := artifact.Read(dt + ".ptx")
		if err != nil {
			t.Fatal(err)
		}
		if art.Plan.AMP != dt {
			t.Errorf("plan records amp %q, want %q", art.Plan.AMP, dt)
		}
		// The weight is read by bind-time kernels only: its cast does not run per run.
		perRun := 0
		for _, k := range art.Plan.Kernels {
			reads := false
			for _, a := range k.Args {
				reads = reads || a.Kind == artifact.ArgParam && a.Name == "w"
			}
			if reads && !k.BindTime {
				t.Errorf("%s: per-run kernel %s (%s) reads the weight", dt, k.Name, k.Ops)
			}
			if !k.BindTime {
				perRun++
			}
		}
		if perRun != 2 { // the input's cast, the matmul with its epilogue
			t.Errorf("%s: %d per-run kernels, want 2", dt, perRun)
		}
		for _, model := range []string{dt + ".ptx", "mm.gir --amp " + dt} {
			out := must(append([]string{"check"}, strings.Fields(model)...)...)
			if !strings.Contains(out, "(autocast "+dt+")") || !strings.Contains(out, "ok") {
				t.Errorf("check %s:\n%s", model, out)
			}
		}
		// The reference runs the autocast graph whether it comes from the module or the source.
		must("run", dt+".ptx", "--device", "ref", "--seed", "2", "--output-dir", dt+"-mod")
		must("run", "mm.gir", "--amp", dt, "--device", "ref", "--seed", "2", "--output-dir", dt+"-src")
		must("run", dt+".ptx", "--device", "sim", "--seed", "2", "--output-dir", dt+"-sim")
		mod, src := readNPY(t, dt+"-mod/z.npy"), readNPY(t, dt+"-src/z.npy")
		for i := range mod.Len() {
			if mod.At(i) != src.At(i) {
				t.Fatalf("%s: z[%d]: ref of the module %v, ref of the source %v", dt, i, mod.At(i), src.At(i))
			}
		}
		if z := readNPY(t, dt+"-sim/z.npy"); z.Type.DType != ir.F32 {
			t.Errorf("%s: output z is %s, want f32", dt, z.Type)
		}
	}
	// Without --amp the numbers differ: the reference above did run in the low dtype.
	must("run", "mm.gir", "--device", "ref", "--seed", "2", "--output-dir", "f32")
	f32, low := readNPY(t, "f32/z.npy"), readNPY(t, "bf16-src/z.npy")
	differ := false
	for i := range f32.Len() {
		differ = differ || f32.At(i) != low.At(i)
	}
	if !differ {
		t.Error("--amp bf16 computes what f32 does")
	}
	must("build", "mm.gir", "-o", "plain.ptx")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "bf16.ptx", "--amp", "f16", "--device", "ref", "--output-dir", "x"}, "--amp f16: the module was built with --amp bf16"},
		{[]string{"check", "plain.ptx", "--amp", "bf16"}, "--amp bf16: the module was built without --amp"},
		{[]string{"build", "mm.gir", "--amp", "fp8"}, `--amp: unknown AMP dtype "fp8" (want bf16 or f16)`},
		{[]string{"run", "mm.gir", "--amp", "f32", "--device", "ref", "--output-dir", "x"}, `--amp: unknown AMP dtype "f32"`},
		{[]string{"check", "mm.gir", "--amp", "BF16"}, `--amp: unknown AMP dtype "BF16"`},
	} {
		code, _, errs := gcompMain(tc.args...)
		if code != 1 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 || strings.Contains(errs, "panic") {
			t.Errorf("gcomp %s: exit %d, stderr %q; want exit 1 and one line with %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
	if _, err := os.Stat("x"); err == nil {
		t.Error("a refused run wrote its output directory")
	}
}

// A weight beyond f16's range (65504) becomes inf when autocast casts it, as in PyTorch, and the
// contraction's result is inf (or NaN) on the reference and the simulator alike; bf16's range is
// f32's, so the same weight stays finite there.
func TestAMPF16Overflow(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("mm.gir", []byte(ampModel), 0o644); err != nil {
		t.Fatal(err)
	}
	w := make([]float64, 8*33)
	w[0] = 1e5 // row 0 of the weight: only z[:, 0] sees it
	if err := tensorio.WriteSafetensorsFile("w.safetensors", map[string]*tensorio.Array{"w": tensor.FromFloats(ir.T(ir.F32, 8, 33), w).Array()}, nil); err != nil {
		t.Fatal(err)
	}
	x := make([]float64, 4*33)
	for i := range x {
		x[i] = 1
	}
	if err := tensorio.WriteNPYFile("x.npy", tensor.FromFloats(ir.T(ir.F32, 4, 33), x).Array()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ amp, dev string }{{"f16", "ref"}, {"f16", "sim"}, {"bf16", "ref"}, {"bf16", "sim"}} {
		dir := tc.amp + "-" + tc.dev
		if code, _, errs := gcompMain("run", "mm.gir", "--amp", tc.amp, "--device", tc.dev, "--weights", "w.safetensors", "--input", "x=x.npy", "--output-dir", dir); code != 0 {
			t.Fatalf("%s: %s", dir, errs)
		}
		z := readNPY(t, dir+"/z.npy")
		for r := range 4 {
			got := z.At(r * 8)
			if tc.amp == "f16" && !math.IsInf(got, 1) {
				t.Errorf("%s: z[%d,0] = %v, want +inf (the weight overflows f16)", dir, r, got)
			}
			if tc.amp == "bf16" && got != 99840 { // 1e5 in bf16
				t.Errorf("%s: z[%d,0] = %v, want 99840", dir, r, got)
			}
			if other := z.At(r*8 + 1); other != 0 {
				t.Errorf("%s: z[%d,1] = %v, want 0", dir, r, other)
			}
		}
	}
}
