package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// gcomp build compiles a .go model in eval mode, as run and check load it (and as PyTorch's
// model.eval() exports): BatchNorm normalizes with its running statistics, Dropout passes
// through. It used to build the training graph, whose plan took the random key as an input and
// wrote BatchNorm's running statistics as outputs, and which over --max-batch was refused
// (dropout's mask at the bound against the symbolic batch). The build over a symbolic batch runs
// on the simulator equal to the reference interpreter on the model file.
func TestBuildEvalMode(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("..", "..", "examples", "fashion", "bncnn", "model.go"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	for _, flags := range [][]string{{"--batch", "2"}, {"--max-batch", "4"}} {
		args := append([]string{"build", model, "-o", "m.ptx"}, flags...)
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		var plan struct {
			Inputs  []struct{ Name string }
			Outputs []struct{ Name string }
		}
		data, err := os.ReadFile("m.plan.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &plan); err != nil {
			t.Fatal(err)
		}
		var ins, outs []string
		for _, v := range plan.Inputs {
			ins = append(ins, v.Name)
		}
		for _, v := range plan.Outputs {
			outs = append(outs, v.Name)
		}
		if !slices.Equal(ins, []string{"x"}) || !slices.Equal(outs, []string{"logits"}) {
			t.Errorf("%v: the plan's inputs %v and outputs %v, want [x] and [logits] (the eval graph)", flags, ins, outs)
		}
	}
	vals := make([]float64, 3*28*28)
	for i := range vals {
		vals[i] = float64(i%17) / 16
	}
	if err := tensorio.WriteNPYFile("x.npy", tensor.FromFloats(ir.T(ir.F32, 3, 1, 28, 28), vals).Array()); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "m.ptx", "--device", "sim", "--input", "x=x.npy", "--output-dir", "sim"},
		{"run", model, "--batch", "3", "--device", "ref", "--input", "x=x.npy", "--output-dir", "ref"},
	} {
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
	got, want := readNPY(t, "sim/logits.npy"), readNPY(t, "ref/logits.npy")
	if !got.Type.Equal(ir.T(ir.F32, 3, 10)) || !want.Type.Equal(got.Type) {
		t.Fatalf("logits: %s on the simulator, %s on the reference", got.Type, want.Type)
	}
	for i := range want.F {
		if d := math.Abs(got.F[i] - want.F[i]); d > 1e-4*(1+math.Abs(want.F[i])) {
			t.Errorf("logits[%d] = %v on the simulator, %v on the reference", i, got.F[i], want.F[i])
		}
	}
}
