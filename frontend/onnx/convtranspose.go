package onnx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/ir"
)

// ConvTranspose, Einsum and LRN, composed of existing ops.

func init() {
	converters["ConvTranspose"] = convConvTranspose
	delete(refused, "ConvTranspose")
	converters["Einsum"] = convEinsum
	converters["LRN"] = convLRN
	delete(refused, "LRN")
}

// flip reverses x along axis a (a gather with a reversed index map).
func (n *node) flip(x *val, a int) *val {
	d := x.t.Shape[a]
	idx := make([]int, d)
	for i := range idx {
		idx[i] = d - 1 - i
	}
	return n.take(x, a, constInts(idx))
}

// convConvTranspose is a convolution of the stride-dilated input (zeros between elements),
// padded by (k-1)·d minus the pads, with the kernel flipped and its channel dims swapped.
func convConvTranspose(n *node) ([]*val, error) {
	if err := n.inputs(2, 3); err != nil {
		return nil, err
	}
	x, wt, bias := n.in[0], n.in[1], n.arg(2)
	sp := len(x.t.Shape) - 2
	if sp < 1 || sp > 2 {
		return nil, unsupportedf("%d spatial dims are not supported (supported: 1, 2)", max(sp, 0))
	}
	if len(wt.t.Shape) != sp+2 || !x.t.DType.IsFloat() {
		return nil, fmt.Errorf("ConvTranspose of %s with weight %s", x.t, wt.t)
	}
	g := n.attrInt("group", 1)
	C := x.t.Shape[1]
	if g < 1 || C%g != 0 || wt.t.Shape[0] != C {
		return nil, fmt.Errorf("group %d does not fit input %s and weight %s", g, x.t, wt.t)
	}
	kernel, ok := n.attrInts("kernel_shape")
	if !ok {
		kernel = []int(wt.t.Shape[2:].Clone())
	}
	strides, err := n.spatialInts("strides", 1, sp)
	if err != nil {
		return nil, err
	}
	dil, err := n.spatialInts("dilations", 1, sp)
	if err != nil {
		return nil, err
	}
	outPad, err := n.spatialInts("output_padding", 0, sp)
	if err != nil {
		return nil, err
	}
	pads, ok := n.attrInts("pads")
	if !ok {
		pads = make([]int, 2*sp)
	}
	if len(pads) != 2*sp || len(kernel) != sp {
		return nil, fmt.Errorf("pads %v or kernel_shape %v do not fit %d spatial dims", pads, kernel, sp)
	}
	autoPad, err := n.attrChoice("auto_pad", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
	if err != nil {
		return nil, err
	}
	outShape, hasOut := n.attrInts("output_shape")
	if hasOut && len(outShape) == sp+2 {
		outShape = outShape[2:]
	}
	if hasOut && len(outShape) != sp {
		return nil, fmt.Errorf("output_shape %v for %d spatial dims", outShape, sp)
	}
	lo, hi := make([]int, sp), make([]int, sp)
	for i := 0; i < sp; i++ {
		in, span := x.t.Shape[2+i], (kernel[i]-1)*dil[i]+1
		if kernel[i] != wt.t.Shape[2+i] || strides[i] < 1 || dil[i] < 1 {
			return nil, fmt.Errorf("kernel_shape %v, strides %v, dilations %v do not fit weight %s", kernel, strides, dil, wt.t)
		}
		full := strides[i]*(in-1) + outPad[i] + span
		target := -1
		switch {
		case hasOut:
			target = outShape[i]
		case autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER":
			target = in * strides[i]
		}
		switch {
		case target >= 0:
			// A negative total pads the output with positions no input reaches (as ONNX's
			// reference does, with Python's floor division).
			total := full - target
			half := total / 2
			if total < 0 && total%2 != 0 {
				half--
			}
			if autoPad == "SAME_UPPER" {
				lo[i], hi[i] = half, total-half
			} else {
				lo[i], hi[i] = total-half, half
			}
		case autoPad == "NOTSET":
			lo[i], hi[i] = pads[i], pads[sp+i]
		}
		if target < 0 && (lo[i] < 0 || hi[i] < 0) {
			return nil, fmt.Errorf("negative pads %v", pads)
		}
	}
	// Lift 1-D to 2-D (H = 1).
	if sp == 1 {
		s, ws := x.t.Shape, wt.t.Shape
		x = n.reshape(x, ir.Shape{s[0], s[1], 1, s[2]})
		wt = n.reshape(wt, ir.Shape{ws[0], ws[1], 1, ws[2]})
		strides, dil, outPad = []int{1, strides[0]}, []int{1, dil[0]}, []int{0, outPad[0]}
		lo, hi, kernel = []int{0, lo[0]}, []int{0, hi[0]}, []int{1, kernel[0]}
	}
	s := x.t.Shape
	N, H, W := s[0], s[2], s[3]
	// Dilate by the strides: [N,C,H,1,W,1] padded to [N,C,H,sh,W,sw], flattened, cropped.
	if strides[0] > 1 || strides[1] > 1 {
		x = n.reshape(x, ir.Shape{N, C, H, 1, W, 1})
		x = n.padConst(x, []int{0, 0, 0, 0, 0, 0}, []int{0, 0, 0, strides[0] - 1, 0, strides[1] - 1}, 0)
		x = n.reshape(x, ir.Shape{N, C, H * strides[0], W * strides[1]})
		x = n.sliceAxis(n.sliceAxis(x, 2, 0, (H-1)*strides[0]+1, 1), 3, 0, (W-1)*strides[1]+1, 1)
	}
	var plo, phi []int
	for i := 0; i < 2; i++ {
		e := (kernel[i] - 1) * dil[i]
		plo = append(plo, e-lo[i])
		phi = append(phi, e-hi[i]+outPad[i])
	}
	x = n.padConst(x, []int{0, 0, plo[0], plo[1]}, []int{0, 0, phi[0], phi[1]}, 0)
	// Weight [C, M/g, kh, kw] → [M, C/g, kh, kw], flipped in space.
	ws := wt.t.Shape
	M := ws[1] * g
	w := n.reshape(wt, ir.Shape{g, C / g, ws[1], ws[2], ws[3]})
	w = n.reshape(n.transpose(w, []int{0, 2, 1, 3, 4}), ir.Shape{M, C / g, ws[2], ws[3]})
	w = n.flip(n.flip(w, 2), 3)
	y, err := n.op("conv2d", ir.Attrs{"dilation": dil, "groups": g}, x, w)
	if err != nil {
		return nil, err
	}
	if bias != nil {
		b, err := n.channel(bias, y)
		if err != nil {
			return nil, err
		}
		y = n.bin("add", y, b)
	}
	if sp == 1 {
		ys := y.t.Shape
		y = n.reshape(y, ir.Shape{ys[0], ys[1], ys[3]})
	}
	return []*val{y}, nil
}

// convEinsum handles one or two operands without ellipses or repeated letters in an operand:
// sums, transposes and contractions (dot_general).
func convEinsum(n *node) ([]*val, error) {
	if err := n.inputs(1, 2); err != nil {
		return nil, err
	}
	eq := strings.ReplaceAll(n.attrString("equation", ""), " ", "")
	lhs, out, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(n.in) {
		return nil, fmt.Errorf("equation %q has %d operands, the node %d", eq, len(terms), len(n.in))
	}
	ell, err := n.einsumEllipsis(eq, terms, &out, explicit)
	if err != nil {
		return nil, err
	}
	ins := slices.Clone(n.in)
	count, uses := map[rune]int{}, map[rune]int{} // operands holding a letter; its occurrences
	for i, t := range terms {
		for _, c := range t {
			uses[c]++
		}
		if len([]rune(t)) != len(ins[i].t.Shape) {
			return nil, fmt.Errorf("equation %q: operand %d has rank %d", eq, i, len(ins[i].t.Shape))
		}
		if ins[i], t, err = n.einsumDiagonals(ins[i], t); err != nil {
			return nil, err
		}
		terms[i] = t
		for _, c := range t {
			count[c]++
		}
	}
	if !explicit {
		letters := []rune(ell) // numpy: the ellipsis's dims first, then the letters used once
		for c, k := range uses {
			if k == 1 && !strings.ContainsRune(ell, c) {
				letters = append(letters, c)
			}
		}
		for i := len(ell); i < len(letters); i++ {
			for j := i + 1; j < len(letters); j++ {
				if letters[j] < letters[i] {
					letters[i], letters[j] = letters[j], letters[i]
				}
			}
		}
		out = string(letters)
	}
	inOut := map[rune]bool{}
	for _, c := range out {
		if count[c] == 0 || inOut[c] {
			return nil, fmt.Errorf("equation %q: bad output index %q", eq, c)
		}
		inOut[c] = true
	}
	// Sum away, in each operand, the letters that are nowhere else.
	xs := make([]*val, len(terms))
	for i, t := range terms {
		var axes []int
		var kept []rune
		for j, c := range t {
			if count[c] == 1 && !inOut[c] {
				axes = append(axes, j)
			} else {
				kept = append(kept, c)
			}
		}
		xs[i] = n.reduce("reduce_sum", ins[i], axes, false)
		terms[i] = string(kept)
	}
	var res *val
	var order []rune
	if len(xs) == 1 {
		res, order = xs[0], []rune(terms[0])
	} else {
		a, b := []rune(terms[0]), []rune(terms[1])
		if xs[0].t.DType != xs[1].t.DType {
			return nil, fmt.Errorf("operand types differ")
		}
		var lb, rb, lc, rc []int
		var batch, lfree, rfree []rune
		for i, c := range a {
			j := strings.IndexRune(string(b), c)
			if j >= 0 {
				j = len([]rune(string(b)[:j]))
			}
			switch {
			case j >= 0 && inOut[c]:
				lb, rb, batch = append(lb, i), append(rb, j), append(batch, c)
			case j >= 0:
				lc, rc = append(lc, i), append(rc, j)
			default:
				lfree = append(lfree, c)
			}
		}
		for _, c := range b {
			if !strings.ContainsRune(string(a), c) {
				rfree = append(rfree, c)
			}
		}
		r, err := n.op("dot_general", ir.Attrs{"lhs_batch": lb, "rhs_batch": rb, "lhs_contract": lc, "rhs_contract": rc}, xs[0], xs[1])
		if err != nil {
			return nil, err
		}
		res, order = r, append(append(batch, lfree...), rfree...)
	}
	perm := make([]int, 0, len(order))
	for _, c := range out {
		for j, o := range order {
			if o == c {
				perm = append(perm, j)
			}
		}
	}
	if len(perm) != len(order) {
		return nil, fmt.Errorf("equation %q: output %q does not cover %q", eq, out, string(order))
	}
	return []*val{n.transpose(res, perm)}, nil
}

func convLRN(n *node) ([]*val, error) {
	if err := n.inputs(1, 1); err != nil {
		return nil, err
	}
	x := n.in[0]
	if len(x.t.Shape) < 3 || !x.t.DType.IsFloat() {
		return nil, fmt.Errorf("LRN needs a float N×C×... input, has %s", x.t)
	}
	size := n.attrInt("size", 0)
	if size < 1 {
		return nil, fmt.Errorf("size %d", size)
	}
	alpha, beta, bias := n.attrFloat("alpha", 1e-4), n.attrFloat("beta", 0.75), n.attrFloat("bias", 1)
	r := len(x.t.Shape)
	lo, hi := make([]int, r), make([]int, r)
	lo[1], hi[1] = (size-1)/2, size-1-(size-1)/2
	sq := n.padConst(n.bin("mul", x, x), lo, hi, 0)
	C := x.t.Shape[1]
	var sum *val
	for k := 0; k < size; k++ {
		s := n.sliceAxis(sq, 1, k, k+C, 1)
		if sum == nil {
			sum = s
		} else {
			sum = n.bin("add", sum, s)
		}
	}
	den := n.bin("add", n.splat(x, bias), n.bin("mul", sum, n.splat(x, alpha/float64(size))))
	return []*val{n.bin("div", x, n.bin("pow", den, n.splat(x, beta)))}, nil
}
