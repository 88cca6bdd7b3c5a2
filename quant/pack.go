package quant

import (
	"encoding/binary"
	"fmt"

	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// Pack stores l in f's layout (GPTQ with its zeros minus one, or AWQ's interleave), the inverse of
// Unpack: tensors by suffix, scales as f16. AWQ has no g_idx, so l's groups must be k / GroupSize.
func Pack(f Format, l *Layer) (map[string]*tensorio.Array, error) {
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("quant: %v", err)
	}
	if err := f.CheckSizes(l.N, l.K); err != nil {
		return nil, fmt.Errorf("quant: %v", err)
	}
	if f.Bits != l.Bits || f.Groups(l.K) != l.G {
		return nil, fmt.Errorf("quant: a %d-bit layer of %d groups is not stored as %s", l.Bits, l.G, f.describe(l.N, l.K))
	}
	n, k, w := l.N, l.K, f.perWord()
	q, z := transpose(l.Q, n, k), transpose(l.Zeros, n, l.G) // [K, N], [G, N]
	parts := f.Parts(n, k)
	out := map[string]*tensorio.Array{}
	for _, p := range parts {
		size := 4
		if p.Suffix == "scales" {
			size = 2
		}
		out[p.Suffix] = &tensorio.Array{DType: p.DType, Shape: p.Shape, Data: make([]byte, size*numel(p.Shape))}
	}
	put := func(a *tensorio.Array, i int, v uint32) {
		binary.LittleEndian.PutUint32(a.Data[4*i:], binary.LittleEndian.Uint32(a.Data[4*i:])|v)
	}
	mask := uint32(1)<<f.Bits - 1
	if f.Method == "awq" {
		want := DefaultGroups(k, f.GroupSize)
		for i, g := range l.Group {
			if g != want[i] {
				return nil, fmt.Errorf("quant: input channel %d is in group %d: awq stores groups of consecutive channels only", i, g)
			}
		}
		for i, v := range q {
			r, col := i/n, i%n
			put(out["qweight"], r*(n/w)+col/w, uint32(v)<<(f.Bits*awqSlot[col%w]))
		}
		for i, v := range z {
			g, col := i/n, i%n
			put(out["qzeros"], g*(n/w)+col/w, uint32(v)<<(f.Bits*awqSlot[col%w]))
		}
	} else {
		for i, v := range q {
			r, col := i/n, i%n
			put(out["qweight"], (r/w)*n+col, uint32(v)<<(f.Bits*(r%w)))
		}
		for i, v := range z {
			g, col := i/n, i%n
			put(out["qzeros"], g*(n/w)+col/w, ((uint32(v)-1)&mask)<<(f.Bits*(col%w)))
		}
		gi := out["g_idx"]
		for i, g := range l.Group {
			binary.LittleEndian.PutUint32(gi.Data[4*i:], uint32(g))
		}
	}
	s := transpose(l.Scales, n, l.G)
	for i, v := range s {
		binary.LittleEndian.PutUint16(out["scales"].Data[2*i:], tensor.FloatToF16(float64(v)))
	}
	return out, nil
}

// awqSlot is the inverse of awqOrder: column c of 8 goes to nibble awqSlot[c].
var awqSlot = func() (s [8]int) {
	for i, c := range awqOrder {
		s[c] = i
	}
	return s
}()
