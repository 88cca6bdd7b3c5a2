package quant

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/tensor"
)

// Quantize rounds the float weight w [n, k] to nearest, as GPTQ's quantizer sets its grid (its
// RTN baseline): per output channel and group of groupSize input channels (-1: the whole row), the
// range [min(w, 0), max(w, 0)] is cut into 2^bits − 1 steps. Asymmetric: the zero point is
// round(−min / s); symmetric (sym): the range is ±max|w| (for rows of one sign too) and the zero point 2^(bits−1). The scale is
// rounded to f16 before the weights are rounded against it, so Dequantize reproduces exactly what
// a reader of the stored layer computes. An all-zero group gets GPTQ's range [−1, 1].
func Quantize(w []float32, n, k, bits, groupSize int, sym bool) (*Layer, error) {
	f := Format{Method: "gptq", Bits: bits, GroupSize: groupSize}
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("quant: %v", err)
	}
	if len(w) != n*k {
		return nil, fmt.Errorf("quant: %d weights for a [%d, %d] layer", len(w), n, k)
	}
	maxq := float64(int(1)<<bits - 1)
	l := &Layer{Bits: bits, N: n, K: k, G: f.Groups(k), Group: DefaultGroups(k, groupSize)}
	l.Q, l.Scales, l.Zeros = make([]uint8, n*k), make([]float32, n*l.G), make([]uint8, n*l.G)
	size := groupSize
	if size == -1 {
		size = max(k, 1)
	}
	for r := range n {
		for g := range l.G {
			lo, hi := g*size, min((g+1)*size, k)
			xs := w[r*k+lo : r*k+hi]
			xmin, xmax := 0.0, 0.0
			for i, x := range xs {
				v := float64(x)
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("quant: weight [%d, %d] is %v", r, lo+i, x)
				}
				xmin, xmax = min(xmin, v), max(xmax, v)
			}
			if sym { // always ±max|w|: GPTQ's quantizer keeps [0, max] for a row of one sign, and clips half its grid
				xmax = max(-xmin, xmax)
				xmin = -xmax
			}
			if xmin == 0 && xmax == 0 {
				xmin, xmax = -1, 1
			}
			s := tensor.F16ToFloat(tensor.FloatToF16((xmax - xmin) / maxq))
			if math.IsInf(s, 0) {
				return nil, fmt.Errorf("quant: weights of row %d, group %d span %g, too wide for an f16 scale", r, g, xmax-xmin)
			}
			if s == 0 {
				s = 0x1p-24 // f16's smallest step: the range is below it
			}
			z := math.Floor((maxq + 1) / 2)
			if !sym {
				z = min(max(math.RoundToEven(-xmin/s), 0), maxq)
			}
			l.Scales[r*l.G+g], l.Zeros[r*l.G+g] = float32(s), uint8(z)
			for i, x := range xs {
				l.Q[r*k+lo+i] = uint8(min(max(math.RoundToEven(float64(x)/s)+z, 0), maxq))
			}
		}
	}
	return l, nil
}
