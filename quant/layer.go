package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// Layer is a quantized linear layer in the canonical form (see the package comment): N outputs,
// K inputs, G groups.
type Layer struct {
	Bits    int
	N, K, G int
	Q       []uint8   // [N, K]
	Scales  []float32 // [N, G], each an f16 value
	Zeros   []uint8   // [N, G]
	Group   []int32   // [K], each in [0, G)
}

// Dequantize returns the float weight [N, K]: (q − z) · s in float32.
func (l *Layer) Dequantize() []float32 {
	w := make([]float32, l.N*l.K)
	for n := range l.N {
		row, qs := w[n*l.K:(n+1)*l.K], l.Q[n*l.K:(n+1)*l.K]
		s, z := l.Scales[n*l.G:(n+1)*l.G], l.Zeros[n*l.G:(n+1)*l.G]
		for k, g := range l.Group {
			row[k] = float32(int(qs[k])-int(z[g])) * s[g]
		}
	}
	return w
}

// Packed is one layer's stored tensors by suffix (qweight, qzeros, scales, g_idx) and where they
// came from: File and the layer's Name (its tensors are Name.SUFFIX) name them in errors.
type Packed struct {
	File, Name string
	Tensors    map[string]*tensorio.Array
}

// CheckShapes checks the dtypes and shapes of a packed layer of n outputs and k inputs, without
// reading data: info returns a stored tensor's dtype and shape, ok false when it is absent.
// Every disagreement is an error naming the file, the tensor and the field.
func CheckShapes(f Format, file, name string, n, k int, info func(suffix string) (dtype string, shape []int, ok bool)) error {
	where := func(suffix string) string { return fmt.Sprintf("quant: %s: tensor %q", file, name+"."+suffix) }
	if err := f.Check(); err != nil {
		return fmt.Errorf("quant: %s: layer %q: %v", file, name, err)
	}
	if err := f.CheckSizes(n, k); err != nil {
		return fmt.Errorf("quant: %s: layer %q: %v", file, name, err)
	}
	for _, p := range f.Parts(n, k) {
		dtype, shape, ok := info(p.Suffix)
		switch {
		case !ok && p.Optional:
			continue
		case !ok:
			return fmt.Errorf("%s is missing (%s)", where(p.Suffix), f.describe(n, k))
		case p.Suffix == "scales" && dtype != "f16" && dtype != "bf16" && dtype != "f32":
			return fmt.Errorf("%s: dtype %s, want F16 (or BF16, F32)", where(p.Suffix), dtype)
		case p.Suffix != "scales" && dtype != p.DType:
			return fmt.Errorf("%s: dtype %s, want I32", where(p.Suffix), dtype)
		case !slices.Equal(shape, p.Shape):
			return fmt.Errorf("%s: shape %v, want %v (%s)", where(p.Suffix), shape, p.Shape, f.describe(n, k))
		}
	}
	return nil
}

// describe names a layer's format and sizes in an error.
func (f Format) describe(n, k int) string {
	return fmt.Sprintf("%s %d-bit, group size %d, %d outputs, %d inputs", f.Method, f.Bits, f.GroupSize, n, k)
}

// Unpack checks a packed layer of n outputs and k inputs and brings it to the canonical form.
func Unpack(f Format, p Packed, n, k int) (*Layer, error) {
	info := func(suffix string) (string, []int, bool) {
		a := p.Tensors[suffix]
		if a == nil {
			return "", nil, false
		}
		return a.DType, a.Shape, true
	}
	if err := CheckShapes(f, p.File, p.Name, n, k, info); err != nil {
		return nil, err
	}
	for suffix, a := range p.Tensors {
		if size, ok := tensorio.DTypeSize(a.DType); !ok || len(a.Data) != size*numel(a.Shape) {
			return nil, fmt.Errorf("quant: %s: tensor %q: %d bytes for shape %v", p.File, p.Name+"."+suffix, len(a.Data), a.Shape)
		}
	}
	l := &Layer{Bits: f.Bits, N: n, K: k, G: f.Groups(k)}
	l.Scales = transpose(scalesOf(p.Tensors["scales"]), l.G, n)
	mask := uint32(1)<<f.Bits - 1
	w := f.perWord()
	qw, qz := words(p.Tensors["qweight"]), words(p.Tensors["qzeros"])
	q := make([]uint8, n*k) // [K, N] first, transposed below
	z := make([]uint8, l.G*n)
	if f.Method == "awq" {
		for i, word := range qw { // [k, c]: nibble j is column 8c + awqOrder[j]
			kk, c := i/(n/w), i%(n/w)
			for j, col := range awqOrder {
				q[kk*n+c*w+col] = uint8(word >> (f.Bits * j) & mask)
			}
		}
		for i, word := range qz {
			g, c := i/(n/w), i%(n/w)
			for j, col := range awqOrder {
				z[g*n+c*w+col] = uint8(word >> (f.Bits * j) & mask)
			}
		}
	} else {
		for i, word := range qw { // [r, n]: field j is input channel r·w + j
			r, col := i/n, i%n
			for j := range w {
				q[(r*w+j)*n+col] = uint8(word >> (f.Bits * j) & mask)
			}
		}
		for i, word := range qz { // stored minus one
			g, c := i/(n/w), i%(n/w)
			for j := range w {
				z[g*n+c*w+j] = uint8((word>>(f.Bits*j) + 1) & mask)
			}
		}
	}
	l.Q, l.Zeros = transpose(q, k, n), transpose(z, l.G, n)
	l.Group = make([]int32, k)
	if gi := p.Tensors["g_idx"]; gi != nil {
		for i, v := range words(gi) {
			if g := int32(v); g < 0 || int(g) >= l.G {
				return nil, fmt.Errorf("quant: %s: tensor %q: element %d is group %d, outside [0, %d)", p.File, p.Name+".g_idx", i, g, l.G)
			} else {
				l.Group[i] = g
			}
		}
	} else {
		l.Group = DefaultGroups(k, f.GroupSize)
	}
	return l, nil
}

// awqOrder is AutoAWQ's interleave: nibble i of a packed int32 holds column awqOrder[i] of its 8.
var awqOrder = [8]int{0, 2, 4, 6, 1, 3, 5, 7}

// DefaultGroups is the group of each of k input channels without act-order: k / groupSize.
func DefaultGroups(k, groupSize int) []int32 {
	g := make([]int32, k)
	if groupSize > 0 {
		for i := range g {
			g[i] = int32(i / groupSize)
		}
	}
	return g
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// words reads an int32 tensor's elements as uint32 bit patterns.
func words(a *tensorio.Array) []uint32 {
	out := make([]uint32, len(a.Data)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(a.Data[4*i:])
	}
	return out
}

// scalesOf reads an f16, bf16 or f32 tensor as float32, exactly.
func scalesOf(a *tensorio.Array) []float32 {
	if a.DType == "f32" {
		out := make([]float32, len(a.Data)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:]))
		}
		return out
	}
	out := make([]float32, len(a.Data)/2)
	for i := range out {
		h := binary.LittleEndian.Uint16(a.Data[2*i:])
		if a.DType == "bf16" {
			out[i] = float32(tensor.BF16ToFloat(h))
		} else {
			out[i] = float32(tensor.F16ToFloat(h))
		}
	}
	return out
}

// transpose turns a [rows, cols] matrix into [cols, rows].
func transpose[T any](a []T, rows, cols int) []T {
	out := make([]T, len(a))
	for r := range rows {
		for c := range cols {
			out[c*rows+r] = a[r*cols+c]
		}
	}
	return out
}
