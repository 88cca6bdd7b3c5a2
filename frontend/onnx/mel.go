package onnx

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

func init() { converters["MelWeightMatrix"] = convMelWeightMatrix }

// convMelWeightMatrix computes the matrix at import (all five inputs decide it), as the
// operator's definition does: num_mel_bins+2 points evenly spaced in mel between the edges
// (the step divides by their count, not by the gaps between them), mapped back to Hz and to
// DFT bins by floor((dft_length+1)·f / sample_rate), and a triangle per mel bin over them.
func convMelWeightMatrix(n *node) ([]*val, error) {
	if err := n.inputs(5, 5); err != nil {
		return nil, err
	}
	var v [5]float64
	for i, what := range []string{"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"} {
		c, err := n.known(i, what)
		if err != nil {
			return nil, err
		}
		if c.Len() != 1 {
			return nil, fmt.Errorf("%s must be a scalar, is %s", what, c.Type)
		}
		v[i] = c.At(0)
	}
	mels, dft, rate, lo, hi := int(v[0]), int(v[1]), v[2], v[3], v[4]
	if mels < 1 || dft < 1 || rate <= 0 || lo < 0 || hi < lo {
		return nil, fmt.Errorf("num_mel_bins %d, dft_length %d, sample_rate %g, edges %g to %g Hz: want positive sizes and 0 ≤ lower ≤ upper", mels, dft, rate, lo, hi)
	}
	bins := dft/2 + 1
	if err := checkFold(bins*mels, "the mel weight matrix"); err != nil {
		return nil, err
	}
	d, err := dtypeOf(int32(n.attrInt("output_datatype", onnxFloat)))
	if err != nil {
		return nil, err
	}
	mel := func(hz float64) float64 { return 2595 * math.Log10(1+hz/700) }
	lowMel := mel(lo)
	step := (mel(hi) - lowMel) / float64(mels+2)
	points := make([]int, mels+2)
	for i := range points {
		hz := 700 * (math.Pow(10, (float64(i)*step+lowMel)/2595) - 1)
		points[i] = int(math.Floor(float64(dft+1) * hz / rate))
		if points[i] < 0 || points[i] >= bins {
			return nil, fmt.Errorf("mel point %d falls in DFT bin %d, outside 0 to %d", i, points[i], bins-1)
		}
	}
	out := make([]float64, bins*mels)
	for i := 0; i < mels; i++ {
		left, center, right := points[i], points[i+1], points[i+2]
		if center == left {
			out[center*mels+i] = 1
		} else {
			for j := left; j <= center; j++ {
				out[j*mels+i] = float64(j-left) / float64(center-left)
			}
		}
		for j := center; j < right; j++ {
			out[j*mels+i] = float64(right-j) / float64(right-center)
		}
	}
	return []*val{constant(tensor.FromFloats(ir.T(d, bins, mels), out))}, nil
}
