package onnx

import (
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Resize, Upsample, CumSum, the window functions and Pad's edge and reflect modes, built from
// gathers with index maps computed at import (exact), selects and sums.

func init() {
	converters["Resize"] = convResize
	converters["Upsample"] = convResize
	converters["CumSum"] = convCumSum
	delete(refused, "Resize")
	delete(refused, "Upsample")
	delete(refused, "CumSum")
	converters["HannWindow"] = windowConv(0.5, 0.5, 0)
	converters["HammingWindow"] = windowConv(25.0/46, 21.0/46, 0)
	converters["BlackmanWindow"] = windowConv(0.42, 0.5, 0.08)
}

func convResize(n *node) ([]*val, error) {
	x := n.in[0]
	r := len(x.t.Shape)
	upsample := n.p.GetOpType() == "Upsample"
	mode, err := n.attrChoice("mode", "nearest", "nearest", "linear", "bilinear", "cubic")
	if err != nil {
		return nil, err
	}
	coord, nearest := "asymmetric", "floor"
	var scales, roi []float64 // roi: tf_crop_and_resize's crop box, starts then ends
	var crops []crop          // the axes whose positions may fall outside the input
	var sizes []int
	switch {
	case upsample && n.opset < 9:
		if scales, _ = n.attrFloats("scales"); scales == nil {
			return nil, fmt.Errorf("Upsample needs scales")
		}
	case upsample || n.opset < 11:
		if err := n.inputs(2, 2); err != nil {
			return nil, err
		}
		c, err := n.known(1, "scales")
		if err != nil {
			return nil, err
		}
		for i := 0; i < c.Len(); i++ {
			scales = append(scales, c.At(i))
		}
		if !upsample {
			return nil, unsupportedf("Resize at opset %d is not supported (supported: 11 to %d)", n.opset, MaxOpset)
		}
	default:
		if mode == "bilinear" {
			return nil, unsupportedf(`mode "bilinear" is not supported (supported: nearest, linear)`)
		}
		if coord, err = n.attrChoice("coordinate_transformation_mode", "half_pixel", "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"); err != nil {
			return nil, err
		}
		if coord == "tf_crop_and_resize" {
			c, err := n.known(1, "roi")
			if err != nil {
				return nil, err
			}
			if c.Len() != 2*r {
				return nil, fmt.Errorf("roi has %d values, want %d (starts and ends)", c.Len(), 2*r)
			}
			for i := 0; i < c.Len(); i++ {
				roi = append(roi, c.At(i))
			}
		}
		if mode == "nearest" {
			if nearest, err = n.attrChoice("nearest_mode", "round_prefer_floor", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"); err != nil {
				return nil, err
			}
		}
		if n.arg(3) != nil {
			if sizes, err = n.knownInts(3, "sizes"); err != nil {
				return nil, err
			}
		} else if n.arg(2) != nil {
			c, err := n.known(2, "scales")
			if err != nil {
				return nil, err
			}
			for i := 0; i < c.Len(); i++ {
				scales = append(scales, c.At(i))
			}
		}
		if sizes == nil && len(scales) == 0 {
			return nil, fmt.Errorf("Resize needs scales or sizes")
		}
	}
	if mode == "bilinear" {
		mode = "linear"
	}
	if !x.t.DType.IsFloat() && mode != "nearest" {
		return nil, unsupportedf("%s Resize of %s is not supported", mode, x.t.DType)
	}
	if mode == "cubic" && upsample {
		return nil, fmt.Errorf(`Upsample has no mode "cubic"`)
	}
	if sizes != nil && len(sizes) != r || sizes == nil && len(scales) != r {
		return nil, fmt.Errorf("scales or sizes do not match rank %d", r)
	}
	for a := 0; a < r; a++ {
		in := x.t.Shape[a]
		var out int
		var scale float64
		if sizes != nil {
			out = sizes[a]
			scale = float64(out) / float64(in)
		} else {
			scale = scales[a]
			if !(scale > 0) || math.IsInf(scale, 0) {
				return nil, fmt.Errorf("scale %v", scale)
			}
			out = int(math.Floor(float64(in) * scale))
		}
		if out < 0 || out > ir.MaxElements {
			return nil, fmt.Errorf("output size %d", out)
		}
		if out == in && scale == 1 && (roi == nil || roi[a] == 0 && roi[r+a] == 1) {
			continue
		}
		if err := checkFold(out, "Resize's index map"); err != nil {
			return nil, err
		}
		if in == 0 || out == 0 {
			return nil, unsupportedf("resizing an empty dim is not supported")
		}
		// ONNX's reference takes the resized length unrounded when scales are given.
		resized := float64(out)
		if sizes == nil {
			resized = float64(in) * scale
		}
		src := make([]float64, out)
		for i := range src {
			xr := float64(i)
			switch coord {
			case "half_pixel":
				src[i] = (xr+0.5)/scale - 0.5
			case "pytorch_half_pixel":
				if out > 1 {
					src[i] = (xr+0.5)/scale - 0.5
				}
			case "align_corners":
				if out > 1 {
					src[i] = xr * float64(in-1) / (resized - 1)
				}
			case "asymmetric":
				src[i] = xr / scale
			case "tf_half_pixel_for_nn":
				src[i] = (xr + 0.5) / scale
			case "tf_crop_and_resize":
				start, end := roi[a], roi[r+a]
				if out > 1 {
					src[i] = start*float64(in-1) + xr*(end-start)*float64(in-1)/(resized-1)
				} else {
					src[i] = 0.5 * (start + end) * float64(in-1)
				}
			}
		}
		if coord == "tf_crop_and_resize" {
			crops = append(crops, crop{a, in, src})
		}
		clampIdx := func(v int) int { return min(max(v, 0), in-1) }
		if mode == "nearest" {
			idx := make([]int, out)
			for i, s := range src {
				var v float64
				switch nearest {
				case "round_prefer_floor":
					if s == math.Floor(s)+0.5 {
						v = math.Floor(s)
					} else {
						v = math.Round(s)
					}
				case "round_prefer_ceil":
					v = math.Round(s)
					if s == math.Floor(s)+0.5 {
						v = math.Ceil(s)
					}
				case "floor":
					v = math.Floor(s)
				case "ceil":
					v = math.Ceil(s)
				}
				idx[i] = clampIdx(int(v))
			}
			x = n.take(x, a, constInts(idx))
			continue
		}
		if mode == "cubic" {
			x = n.cubic(x, a, in, src)
			continue
		}
		i0, i1 := make([]int, out), make([]int, out)
		w := tensor.New(ir.T(x.t.DType, out))
		for i, s := range src {
			f := math.Floor(s)
			i0[i], i1[i] = clampIdx(int(f)), clampIdx(int(f)+1)
			w.F[i] = tensor.RoundFloat(x.t.DType, s-f)
		}
		x0, x1 := n.take(x, a, constInts(i0)), n.take(x, a, constInts(i1))
		wb := must(n.opWant("broadcast_in_dim", ir.Attrs{"shape": []int(x0.t.Shape.Clone()), "dims": []int{a}}, x0.t.Sym, constant(w)))
		// x0 + w·(x1 - x0) would round differently; ONNX's reference weighs both neighbours.
		one := n.bin("sub", n.splat(wb, 1), wb)
		x = n.bin("add", n.bin("mul", x0, one), n.bin("mul", x1, wb))
	}
	for _, c := range crops {
		x = n.extrapolate(x, c)
	}
	return []*val{x}, nil
}

// crop is an axis of a tf_crop_and_resize Resize: its input length and source coordinates.
type crop struct {
	a, in int
	src   []float64
}

// cubic interpolates x along axis a at the source coordinates src: four taps around each,
// weighted by the cubic convolution kernel with coefficient A (ONNX's cubic_coeff_a), taps
// beyond the border repeating the edge, or dropped and the rest renormalized with
// exclude_outside.
func (n *node) cubic(x *val, a, in int, src []float64) *val {
	A := n.attrFloat("cubic_coeff_a", -0.75)
	excl := n.attrInt("exclude_outside", 0) != 0
	out := len(src)
	var idx [4][]int
	var w [4]*tensor.Tensor
	for k := range idx {
		idx[k] = make([]int, out)
		w[k] = tensor.New(ir.T(x.t.DType, out))
	}
	for i, s := range src {
		f := math.Floor(s)
		r := s - f
		c := [4]float64{
			((A*(r+1)-5*A)*(r+1)+8*A)*(r+1) - 4*A,
			((A+2)*r-(A+3))*r*r + 1,
			((A+2)*(1-r)-(A+3))*(1-r)*(1-r) + 1,
			((A*(2-r)-5*A)*(2-r)+8*A)*(2-r) - 4*A,
		}
		sum := 0.0
		for k := range c {
			p := int(f) - 1 + k
			if excl && (p < 0 || p >= in) {
				c[k] = 0
			}
			sum += c[k]
			idx[k][i] = min(max(p, 0), in-1)
		}
		for k := range c {
			if excl && sum != 0 {
				c[k] /= sum
			}
			w[k].F[i] = tensor.RoundFloat(x.t.DType, c[k])
		}
	}
	var acc *val
	for k := range idx {
		t := n.take(x, a, constInts(idx[k]))
		wb := must(n.opWant("broadcast_in_dim", ir.Attrs{"shape": []int(t.t.Shape.Clone()), "dims": []int{a}}, t.t.Sym, constant(w[k])))
		if term := n.bin("mul", t, wb); acc == nil {
			acc = term
		} else {
			acc = n.bin("add", acc, term)
		}
	}
	return acc
}

func convCumSum(n *node) ([]*val, error) {
	if err := n.inputs(2, 2); err != nil {
		return nil, err
	}
	x := n.in[0]
	if x.t.DType == ir.Bool {
		return nil, unsupportedf("CumSum of bool is not supported")
	}
	c, err := n.known(1, "axis")
	if err != nil {
		return nil, err
	}
	if c.Len() != 1 {
		return nil, fmt.Errorf("axis must be a scalar")
	}
	r := len(x.t.Shape)
	a, err := axis(int(c.At(0)), r)
	if err != nil {
		return nil, err
	}
	d := x.t.Shape[a]
	if err := checkFold(d*d, "CumSum's mask"); err != nil {
		return nil, err
	}
	excl, rev := n.attrInt("exclusive", 0) != 0, n.attrInt("reverse", 0) != 0
	// y[..j..] = Σ_k mask[k,j]·x[..k..]: x broadcast over a new dim j after a, the terms not
	// summed selected away (a select, not a multiply by 0, so inf stays inf), summed over k.
	m := tensor.New(ir.T(ir.Bool, d, d))
	for k := 0; k < d; k++ {
		for j := 0; j < d; j++ {
			in := k <= j
			switch {
			case excl && !rev:
				in = k < j
			case rev && !excl:
				in = k >= j
			case rev && excl:
				in = k > j
			}
			if in {
				m.I[k*d+j] = 1
			}
		}
	}
	e := append(append(x.t.Shape[:a+1:a+1], d), x.t.Shape[a+1:]...)
	xdims := insertDim(r, a+1)
	xb := must(n.op("broadcast_in_dim", ir.Attrs{"shape": []int(e.Clone()), "dims": xdims}, x))
	mb := must(n.op("broadcast_in_dim", ir.Attrs{"shape": []int(e.Clone()), "dims": []int{a, a + 1}}, constant(m)))
	return []*val{n.reduce("reduce_sum", must(n.selectOp(mb, xb, n.splat(x, 0))), []int{a}, false)}, nil
}

func windowConv(a0, a1, a2 float64) converter {
	return func(n *node) ([]*val, error) {
		if err := n.inputs(1, 1); err != nil {
			return nil, err
		}
		c, err := n.known(0, "size")
		if err != nil {
			return nil, err
		}
		if c.Len() != 1 || c.At(0) < 0 || c.At(0) > ir.MaxElements {
			return nil, fmt.Errorf("size must be a non-negative scalar")
		}
		size := int(c.At(0))
		if err := checkFold(size, "the window"); err != nil {
			return nil, err
		}
		d, err := dtypeOf(int32(n.attrInt("output_datatype", onnxFloat)))
		if err != nil {
			return nil, err
		}
		N := float64(size)
		if n.attrInt("periodic", 1) == 0 {
			N--
		}
		vals := make([]float64, size)
		for i := range vals {
			t := 2 * math.Pi * float64(i) / N
			vals[i] = a0 - a1*math.Cos(t) + a2*math.Cos(2*t)
		}
		return []*val{constant(tensor.FromFloats(ir.T(d, size), vals))}, nil
	}
}

// padIndexed pads by gathering with an index map per axis: edge repeats the border, reflect
// mirrors without repeating it.
func (n *node) padIndexed(x *val, pads []int, mode string) (*val, error) {
	r := len(x.t.Shape)
	for a := 0; a < r; a++ {
		lo, hi, d := pads[a], pads[r+a], x.t.Shape[a]
		if lo < 0 || hi < 0 {
			return nil, unsupportedf("negative pads with mode %q are not supported", mode)
		}
		if lo == 0 && hi == 0 {
			continue
		}
		if d == 0 || mode == "reflect" && d == 1 {
			return nil, fmt.Errorf("cannot %s-pad a dim of size %d", mode, d)
		}
		if err := checkFold(d+lo+hi, "Pad's index map"); err != nil {
			return nil, err
		}
		idx := make([]int, d+lo+hi)
		for i := range idx {
			j := i - lo
			if mode == "edge" {
				j = min(max(j, 0), d-1)
			} else {
				for j < 0 || j >= d {
					if j < 0 {
						j = -j
					}
					if j >= d {
						j = 2*(d-1) - j
					}
				}
			}
			idx[i] = j
		}
		x = n.take(x, a, constInts(idx))
	}
	return x, nil
}

// extrapolate sets the positions along axis c.a whose source coordinate lies outside the input
// (tf_crop_and_resize's crop box reaching past it) to extrapolation_value.
func (n *node) extrapolate(x *val, c crop) *val {
	outside := tensor.New(ir.T(ir.Bool, len(c.src)))
	any := false
	for i, s := range c.src {
		if s < 0 || s > float64(c.in-1) {
			outside.I[i], any = 1, true
		}
	}
	if !any {
		return x
	}
	mask := must(n.opWant("broadcast_in_dim", ir.Attrs{"shape": []int(x.t.Shape.Clone()), "dims": []int{c.a}}, x.t.Sym, constant(outside)))
	return must(n.selectOp(mask, n.splatOf(x.t, n.attrFloat("extrapolation_value", 0)), x))
}
