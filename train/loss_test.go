package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes/autodiff"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/tensor"
)

// torchLossCase is one case of testdata/torch_losses.json, which
// scripts/torch_loss_reference.py writes with PyTorch.
type torchLossCase struct {
	Loss      string         `json:"loss"`
	Args      map[string]any `json:"args"`
	Reduction string         `json:"reduction"`
	Pred      []float64      `json:"pred"`
	Target    []float64      `json:"target"`
	Shape     []int          `json:"shape"`
	Want      []num          `json:"want"`
	Grad      []num          `json:"grad"` // of the sum of the result, with respect to pred
}

// num is a float64 that JSON may spell "NaN", "Infinity" or "-Infinity", as the script writes
// what is not finite.
type num float64

func (n *num) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		f, err := strconv.ParseFloat(s, 64)
		*n = num(f)
		return err
	}
	return json.Unmarshal(b, (*float64)(n))
}

func (c torchLossCase) loss(t *testing.T) Loss {
	l, err := ParseLoss(c.Loss)
	if err != nil {
		t.Fatal(err)
	}
	floats := func(v any) []float64 {
		var fs []float64
		for _, x := range v.([]any) {
			fs = append(fs, x.(float64))
		}
		return fs
	}
	for k, v := range c.Args {
		switch k {
		case "weight":
			l.Weight = floats(v)
		case "pos_weight":
			l.PosWeight = floats(v)
		case "ignore_index":
			i := int64(v.(float64))
			l.IgnoreIndex = &i
		case "label_smoothing":
			l.LabelSmoothing = v.(float64)
		case "beta":
			b := v.(float64)
			l.Beta = &b
		default:
			t.Fatalf("unknown argument %s", k)
		}
	}
	return l
}

// Every loss, with its arguments and each reduction, computes what PyTorch computes (float64,
// on the reference interpreter).
func TestLossesMatchTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch_losses.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref1 struct {
		Cases []torchLossCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &ref1); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range ref1.Cases {
		l := c.loss(t)
		seen[l.Name] = true
		r := map[string]frontend.Reduction{"mean": frontend.ReductionMean, "sum": frontend.ReductionSum, "none": frontend.ReductionNone}[c.Reduction]
		name := fmt.Sprintf("%s/%s", l, c.Reduction)
		if l.IgnoreIndex != nil && !slices.ContainsFunc(c.Target, func(y float64) bool { return y != float64(*l.IgnoreIndex) }) {
			name += "/every label ignored"
		}
		t.Run(name, func(t *testing.T) {
			pt := ir.T(ir.F64, c.Shape...)
			tt := l.TargetType(pt)
			if !l.Class() {
				tt = pt
			}
			g, err := frontend.Build("loss", func(b *frontend.Builder) {
				out := l.Build(b.Input("pred", pt.DType, pt.Shape...), b.Input("target", tt.DType, tt.Shape...), r)
				b.Output("loss", out)
				b.Output("sum", out.Sum())
			})
			if err != nil {
				t.Fatal(err)
			}
			if g, err = autodiff.Grad(g, "sum", []string{"pred"}); err != nil {
				t.Fatal(err)
			}
			in := map[string]*tensor.Tensor{"pred": tensor.FromFloats(pt, c.Pred), "target": tensor.FromFloats(tt, c.Target)}
			out, err := ref.Run(g, in, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []struct {
				what string
				got  []float64
				want []num
			}{{"loss", out["loss"].F, c.Want}, {"d/dpred", out[autodiff.GradPrefix+"pred"].F, c.Grad}} {
				if len(v.got) != len(v.want) {
					t.Fatalf("%s: %d values %v, PyTorch has %d", v.what, len(v.got), v.got, len(v.want))
				}
				for i, w := range v.want {
					g, w := v.got[i], float64(w)
					if !(math.Abs(g-w) <= 1e-12*(1+math.Abs(w)) || g == w || math.IsNaN(g) && math.IsNaN(w)) {
						t.Errorf("%s[%d] = %.17g, PyTorch %.17g", v.what, i, g, w)
					}
				}
			}
		})
	}
	for _, name := range Losses {
		if !seen[name] {
			t.Errorf("no PyTorch reference for %s", name)
		}
	}
}

// Arguments a loss does not take, or out of range, are errors.
func TestLossCheck(t *testing.T) {
	beta := -1.0
	ii := int64(0)
	for _, tc := range []struct {
		l    Loss
		want string
	}{
		{Loss{Name: "HingeLoss"}, `unknown loss "HingeLoss"`},
		{Loss{Name: MSELoss, Weight: []float64{1}}, "MSELoss takes no class weights"},
		{Loss{Name: L1Loss, IgnoreIndex: &ii}, "L1Loss takes no class weights or ignore_index"},
		{Loss{Name: NLLLoss, LabelSmoothing: 0.1}, "NLLLoss takes no label_smoothing"},
		{Loss{Name: CrossEntropyLoss, LabelSmoothing: 1.5}, "label_smoothing 1.5"},
		{Loss{Name: SmoothL1Loss, Beta: &beta}, "beta -1"},
		{Loss{Name: CrossEntropyLoss, PosWeight: []float64{1}}, "takes no pos_weight"},
	} {
		if err := tc.l.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.l, err, tc.want)
		}
	}
	if l, err := ParseLoss("mseloss"); err != nil || l.Name != MSELoss {
		t.Errorf("ParseLoss(mseloss) = %v, %v", l, err)
	}
}
