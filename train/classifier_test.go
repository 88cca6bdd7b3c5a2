package train

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

func scores(b *frontend.Builder) *frontend.Tensor {
	x := b.Input("x", frontend.F32, 4, 6)
	return nn.NewLinear(b, "fc", 6, 3).Forward(x)
}

// The loss WithCrossEntropy adds to a classifier is the one the model would compute itself with
// frontend.CrossEntropyLoss, bit for bit, for every reduction.
func TestWithCrossEntropy(t *testing.T) {
	classifier, err := frontend.Build("c", func(b *frontend.Builder) { b.Output(LogitsName, scores(b)) })
	if err != nil {
		t.Fatal(err)
	}
	params, err := InitParams(classifier, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []frontend.Reduction{frontend.ReductionMean, frontend.ReductionSum, frontend.ReductionNone} {
		t.Run(r.String(), func(t *testing.T) {
			g, err := WithCrossEntropy(classifier, r)
			if err != nil {
				t.Fatal(err)
			}
			own, err := frontend.Build("own", func(b *frontend.Builder) {
				logits := scores(b)
				b.Output(LogitsName, logits)
				b.Output(DefaultLoss, frontend.CrossEntropyLossWith(logits, b.Input(LabelsName, frontend.I64, 4), frontend.LossOptions{Reduction: r}))
			})
			if err != nil {
				t.Fatal(err)
			}
			labels := tensor.New(ir.T(ir.I64, 4))
			copy(labels.I, []int64{0, 2, 1, 2})
			in := map[string]*tensor.Tensor{"x": tensor.RandomInput(g.Lookup("x"), 2), LabelsName: labels}
			got, err := ref.Run(g, in, params)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Run(own, in, params)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{LogitsName, DefaultLoss} {
				if !got[name].Type.Equal(want[name].Type) || !slices.Equal(got[name].F, want[name].F) {
					t.Errorf("%s = %v %v, want %v %v", name, got[name].Type, got[name].F, want[name].Type, want[name].F)
				}
			}
			if len(classifier.Outputs) != 1 || classifier.Lookup(LabelsName) != nil {
				t.Errorf("the classifier's graph was changed")
			}
		})
	}
}

func TestWithCrossEntropyErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model func(b *frontend.Builder)
		want  string
	}{
		{"no logits", func(b *frontend.Builder) { b.Output("scores", scores(b)) }, "has no output logits"},
		{"own loss", func(b *frontend.Builder) {
			l := scores(b)
			b.Output(LogitsName, l)
			b.Output(DefaultLoss, l.Sum())
		}, "already has an output loss"},
		{"labels taken", func(b *frontend.Builder) {
			b.Input(LabelsName, frontend.I64, 4)
			b.Output(LogitsName, scores(b))
		}, "already declares labels"},
		{"not a matrix", func(b *frontend.Builder) { b.Output(LogitsName, scores(b).Sum(1)) }, "output logits is f32[4], want float class scores [N,C]"},
	} {
		g, err := frontend.Build("c", tc.model)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := WithCrossEntropy(g, frontend.ReductionMean); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
