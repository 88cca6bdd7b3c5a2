package nn_test

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

// A size or scale factor written as one number, [2]int{N}, is PyTorch's single number: N in
// both dims. The pair form keeps its meaning, and a size that is no size is still an error.
func TestSquareSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  nn.Module
		want string // output type, or the error
	}{
		{"avg one", nn.AdaptiveAvgPool2d{OutputSize: [2]int{1}}, "f32[2,3,1,1]"},
		{"avg three", nn.AdaptiveAvgPool2d{OutputSize: [2]int{3}}, "f32[2,3,3,3]"},
		{"avg pair", nn.AdaptiveAvgPool2d{OutputSize: [2]int{2, 3}}, "f32[2,3,2,3]"},
		{"max one", nn.AdaptiveMaxPool2d{OutputSize: [2]int{2}}, "f32[2,3,2,2]"},
		{"upsample scale", nn.Upsample{ScaleFactor: [2]float64{2}}, "f32[2,3,12,16]"},
		{"upsample scale pair", nn.Upsample{ScaleFactor: [2]float64{2, 1}}, "f32[2,3,12,8]"},
		{"upsample size", nn.Upsample{Size: [2]int{5}, Mode: "bilinear"}, "f32[2,3,5,5]"},
		{"upsample size pair", nn.Upsample{Size: [2]int{5, 7}}, "f32[2,3,5,7]"},
		{"avg zero", nn.AdaptiveAvgPool2d{}, "square_test.go:33: adaptive_avg_pool2d: output size [0 0] must be positive"},
		{"avg negative", nn.AdaptiveAvgPool2d{OutputSize: [2]int{-2}}, "square_test.go:33: adaptive_avg_pool2d: output size [-2 -2] must be positive"},
	} {
		var got string
		_, err := frontend.Build("square", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, 2, 3, 6, 8)
			y := tc.mod.Forward(x)
			got = y.Type().String()
			b.Output("y", y)
		})
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
