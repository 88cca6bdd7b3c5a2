package train

import (
	"testing"
)

// BenchmarkMLPStepRef is one SGD step (forward, backward, update) of the MLP 784-256-10 on the
// reference device, batch 32; scripts/torch_train_reference.sh bench runs it next to PyTorch.
func BenchmarkMLPStepRef(b *testing.B) {
	for _, opt := range []Optimizer{&SGD{LR: 0.01, Momentum: 0.9}, NewAdam()} {
		b.Run(opt.Name(), func(b *testing.B) {
			s, err := Step("mlp", mlpModel, opt, Options{})
			if err != nil {
				b.Fatal(err)
			}
			tr := NewRefTrainer(s, mlpParams())
			batch, _ := mlpBatch(0)
			b.ResetTimer()
			for range b.N {
				if _, err := tr.Run(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(batch["x"].Type.Shape[0]*b.N)/b.Elapsed().Seconds(), "images/s")
		})
	}
}
