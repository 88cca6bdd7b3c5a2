package main

import (
	"os"
	"testing"

	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// dropoutClassifier has BatchNorm and Dropout: gcomp train runs it in training mode.
const dropoutClassifier = `package drop

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 16, 1, 28, 28)
	fc1, bn, fc2 := nn.NewLinear(b, "fc1", 784, 8), nn.NewBatchNorm1d(b, "bn", 8), nn.NewLinear(b, "fc2", 8, 10)
	h := nn.Dropout{P: 0.5}.Forward(bn.Forward(fc1.Forward(nn.Flatten{}.Forward(x))).Relu())
	b.Output("logits", fc2.Forward(h))
}
`

// gcomp train builds the step in training mode: the checkpoint holds BatchNorm's updated
// buffers (num_batches_tracked counts the 4 steps) and the random key (the seed's, advanced 4
// times), and the simulator's checkpoint equals the reference's, dropout masks included.
func TestTrainDropoutBatchNorm(t *testing.T) {
	data := trainFixture(t)
	if err := os.WriteFile("drop.go", []byte(dropoutClassifier), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"ref", "sim"} {
		runTrain(t, "drop.go", "--data", data, "--device", dev, "--optimizer", "sgd", "--lr", "0.1", "--seed", "5", "--save", dev+".safetensors")
	}
	read := func(name string) map[string]*tensor.Tensor {
		a, _, err := tensorio.ReadSafetensorsFile(name)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*tensor.Tensor{}
		for k, v := range a {
			if out[k], err = tensor.FromArray(v); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	want, got := read("ref.safetensors"), read("sim.safetensors")
	if n := want["bn.num_batches_tracked"]; n == nil || n.I[0] != 4 {
		t.Errorf("num_batches_tracked %v, want 4", n)
	}
	if k := want["rng.key"]; k == nil || k.I[0] != 5<<32+4 {
		t.Errorf("rng.key %v, want 5<<32 + 4", k)
	}
	for name, w := range want {
		if g := got[name]; g == nil {
			t.Errorf("%s missing from the simulator's checkpoint", name)
		} else if o := check.Compare(name, g, w, false); !o.Pass() {
			t.Errorf("%s: %d elements differ, first %s", name, o.Bad, o.First)
		}
	}
}
