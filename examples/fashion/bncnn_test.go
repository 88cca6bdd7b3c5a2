package fashion_test

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/examples/fashion/bncnn"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/train"
)

// The BatchNorm and Dropout classifier's compiled train step on the simulator matches the
// reference step for step, as gcomp train runs it (training mode, Adam): the same dropout
// masks (dropped activations are exact zeros on both, and the masks change from step to
// step), the same loss, and after every step the same weights, running statistics and
// num_batches_tracked. The network is the example's, on a batch of 2 fixture images.
func TestBNCNNTrainParity(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the train step of a CNN on the simulator")
	}
	const n, steps = 2, 3
	images, _, err := data.LoadMNIST(filepath.Join("..", "..", "data", "testdata", "mnist"))
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := frontend.Build("bncnn", func(b *frontend.Builder) {
		x, labels := b.Input("x", frontend.F32, n, 1, 28, 28), b.Input("labels", frontend.I64, n)
		m := bncnn.NewCNN(b)
		h := m.Hidden(x)
		b.Output("hidden", h)
		b.Output("loss", frontend.CrossEntropyLoss(m.FC2.Forward(h), labels))
	}, frontend.WithTraining())
	if err != nil {
		t.Fatal(err)
	}
	step, err := train.StepFromGraph(fwd, train.NewAdam(), train.Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(step.Graph, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	params, err := train.InitParams(step.Graph, 5)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := step.Load(simdev.New(simdev.Options{}), res.Artifact, params, step.InitState())
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	ref := train.NewRefTrainer(step, params)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range params {
			if !yield(k) {
				return
			}
		}
	})
	loader := &data.Loader{Data: images, Batch: n, DropLast: true}
	var masks []string
	i := 0
	for b, err := range loader.Epoch(0) {
		if err != nil {
			t.Fatal(err)
		}
		if i == steps {
			break
		}
		batch := map[string]*tensor.Tensor{"x": b.X, "labels": b.Y}
		got, err := prog.Run(batch)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(batch)
		if err != nil {
			t.Fatal(err)
		}
		mask := ""
		for j, w := range want["hidden"].F {
			g := got.Outputs["hidden"].F[j]
			if (g == 0) != (w == 0) || math.Abs(g-w) > 1e-4*(1+math.Abs(w)) {
				t.Fatalf("step %d: hidden[%d] = %v on the simulator, %v on the reference", i, j, g, w)
			}
			mask += map[bool]string{true: "0", false: "1"}[w == 0]
		}
		masks = append(masks, mask)
		if g, w := got.Outputs[step.Loss].F[0], want[step.Loss].F[0]; math.Abs(g-w) > 1e-5*(1+math.Abs(w)) {
			t.Errorf("step %d: loss %g on the simulator, %g on the reference", i, g, w)
		}
		for _, name := range names {
			g, err := prog.Read(name)
			if err != nil {
				t.Fatal(err)
			}
			w := ref.Params[name]
			bad := 0
			for j := range w.Len() {
				if math.Abs(g.At(j)-w.At(j)) > 1e-4*(1+math.Abs(w.At(j))) {
					if bad++; bad <= 3 {
						t.Errorf("step %d: %s[%d] = %v on the simulator, %v on the reference", i, name, j, g.At(j), w.At(j))
					}
				}
			}
		}
		i++
	}
	if i != steps {
		t.Fatalf("%d steps from the fixture, want %d", i, steps)
	}
	if masks[0] == masks[1] || masks[1] == masks[2] {
		t.Errorf("the dropout masks repeat from step to step")
	}
	if nb := ref.Params["bn1.num_batches_tracked"].I[0]; nb != steps {
		t.Errorf("bn1.num_batches_tracked %d after %d steps", nb, steps)
	}
}
