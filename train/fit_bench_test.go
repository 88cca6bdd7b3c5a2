package train

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/examples/fashion/mlp"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// BenchmarkTrainEpoch times an epoch of Fit's loop (gcomp train's) on the reference device with
// and without prefetch, and reports how long the loop waited for batches (data-wait-ms/epoch):
// the host loader's time that the overlap hides. The loader sub-benchmark times the loader
// alone. It trains the MLP example (batch 64) on the first 1280 Fashion-MNIST images when the
// data set is installed, else a tiny classifier (batch 16) on the 64 fixture images:
//
//	go test ./train -run '^$' -bench TrainEpoch -benchtime 5x
func BenchmarkTrainEpoch(b *testing.B) {
	model := mlp.Model
	trainSet, _, err := data.FashionMNISTLimit("", 1280)
	if err != nil {
		model = func(bd *frontend.Builder) {
			x := bd.Input("x", ir.F32, 16, 1, 28, 28)
			fc1, fc2 := nn.NewLinear(bd, "fc1", 784, 8), nn.NewLinear(bd, "fc2", 8, 10)
			bd.Output("logits", fc2.Forward(fc1.Forward(nn.Flatten{}.Forward(x)).Relu()))
		}
		if trainSet, _, err = data.LoadMNIST(filepath.Join("..", "data", "testdata", "mnist")); err != nil {
			b.Fatal(err)
		}
	}
	m := buildModel(b, model, Loss{Name: CrossEntropyLoss})
	step, err := m.Step(NewAdam(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	set, flatten, err := m.bind(trainSet)
	if err != nil {
		b.Fatal(err)
	}
	params, err := InitParams(step.Graph, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %d steps of %d", trainSet.Name, trainSet.N/m.Batch, m.Batch)
	b.Run("loader", func(b *testing.B) {
		loader := &data.Loader{Data: set, Batch: m.Batch, Shuffle: true, DropLast: true, Flatten: flatten, NoWorker: true}
		for i := range b.N {
			for _, err := range loader.Epoch(i) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	for _, prefetch := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefetch=%v", prefetch), func(b *testing.B) {
			tr, err := newTrainer(nil, compiler.Options{}, step, m, params, step.InitState(), prefetch, true)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.close()
			loader := &data.Loader{Data: set, Batch: m.Batch, Shuffle: true, DropLast: true, Flatten: flatten,
				NoWorker: !prefetch, Prepare: tr.prepare}
			var waited time.Duration
			for i := range b.N {
				w, err := runEpoch(tr, loader, i, func(*data.Batch, map[string]*tensor.Tensor) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				waited += w
			}
			b.ReportMetric(float64(waited.Microseconds())/1e3/float64(b.N), "data-wait-ms/epoch")
		})
	}
}

// BenchmarkBind times Fit's check of a dataset against the model before training (every row
// read once): the 60000 Fashion-MNIST training images for the MLP example when the data set is
// installed, else the 64 fixture images.
//
//	go test ./train -run '^$' -bench Bind -benchtime 3x
func BenchmarkBind(b *testing.B) {
	set, _, err := data.FashionMNIST("")
	if err != nil {
		if set, _, err = data.LoadMNIST(filepath.Join("..", "data", "testdata", "mnist")); err != nil {
			b.Fatal(err)
		}
	}
	m := buildModel(b, mlp.Model, Loss{Name: CrossEntropyLoss})
	b.Logf("%s: %d images", set.Name, set.N)
	b.ResetTimer()
	for range b.N {
		if _, _, err := m.bind(set); err != nil {
			b.Fatal(err)
		}
	}
}
