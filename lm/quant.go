package lm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/quant"
	"github.com/gcomp/gcomp/tensor"
)

// QuantConfig is how the transformer blocks' linear layers (checkpoint.Quantizable) are stored on
// the device: as the dequantize op's integers, scales and zero points, dequantized inside the
// GEMV that reads them (docs/fusion.md). Bits 0 is float weights.
type QuantConfig struct {
	Bits      int // 8 or 4; 0: float
	GroupSize int // input channels per scale; -1 (or K or more): one scale per output channel
}

// group is the dequantize op's group for a layer of k inputs: 0 when the op cannot hold the
// checkpoint's groups (its groups are whole runs along K, so the size must divide K).
func (q QuantConfig) group(k int) int {
	switch {
	case k == 0:
		return 0
	case q.GroupSize == -1 || q.GroupSize >= k:
		return k
	case q.GroupSize > 0 && k%q.GroupSize == 0:
		return q.GroupSize
	}
	return 0
}

// onDevice is the dequantize op's attributes for the parameter name of type t, nil when it is a
// float parameter: not a quantizable layer, a float model, or a layer dequantized at load. A
// layer loaded with its input channels permuted (act-order: weights NAME_perm) is Permuted.
func (m *Model) onDevice(name string, t ir.Type) *frontend.Quant {
	if m.Quant.Bits == 0 || !checkpoint.Quantizable(name) || len(t.Shape) != 2 || slices.Contains(m.atLoad, name) {
		return nil
	}
	g := m.Quant.group(t.Shape[1])
	if g == 0 || m.Quant.Bits == 4 && t.Shape[1]%2 != 0 {
		return nil
	}
	_, permuted := m.weights[name+"_perm"]
	return &frontend.Quant{Bits: m.Quant.Bits, Group: g, Axis: 1, Permuted: permuted}
}

// DequantizedAtLoad lists the quantized layers whose weights are f32 on the device: those whose
// groups the dequantize op cannot hold even with the input channels permuted (a group size that
// does not divide K, groups of unequal sizes).
func (m *Model) DequantizedAtLoad() []string { return m.atLoad }

// quantizedWeights turns a quantized linear layer of a checkpoint (GPTQ, AWQ) into the program's
// parameters: NAME_q, NAME_scale and NAME_zero in the dequantize op's layout (docs/ops.md) when
// its groups are contiguous runs along K as the op's are, or can be made so by permuting the input
// channels (act-order; then also NAME_perm, see inputOrder), else the f32 weight NAME dequantized
// at load, atLoad true.
func quantizedWeights(w *checkpoint.Weight, qc QuantConfig) (ts map[string]*tensor.Tensor, atLoad bool, err error) {
	l, err := w.Layer()
	if err != nil {
		return nil, false, err
	}
	perm, ok := inputOrder(l, qc)
	if !ok {
		t := tensor.Empty(ir.T(ir.F32, l.N, l.K))
		for i, v := range l.Dequantize() {
			t.F[i] = float64(v)
		}
		return map[string]*tensor.Tensor{w.Name: t}, true, nil
	}
	if perm == nil {
		return opLayout(w.Name, l), false, nil
	}
	ts = opLayout(w.Name, permuteInputs(l, perm))
	p := tensor.Empty(ir.T(ir.I32, l.K))
	for j, k := range perm {
		p.I[j] = int64(k)
	}
	ts[w.Name+"_perm"] = p
	return ts, false, nil
}

// inputOrder is the order of l's input channels on the device for the op's group g: nil when
// l's group of channel k is already k / g (contiguous runs); with act-order, whose g_idx spreads
// each group over K, the channels sorted by group, stably (as exllama and Marlin reorder them),
// when every group then is a run of exactly g channels. ok is false when the op cannot hold the
// groups at all (a group size that does not divide K, an odd K at 4 bits, other bits, groups of
// other sizes).
func inputOrder(l *quant.Layer, qc QuantConfig) (perm []int, ok bool) {
	g := qc.group(l.K)
	if l.Bits != qc.Bits || g == 0 || l.Bits == 4 && l.K%2 != 0 || l.G != l.K/g {
		return nil, false
	}
	contiguous := true
	for k, gi := range l.Group {
		contiguous = contiguous && int(gi) == k/g
	}
	if contiguous {
		return nil, true
	}
	perm = make([]int, l.K)
	for k := range perm {
		perm[k] = k
	}
	slices.SortStableFunc(perm, func(a, b int) int { return int(l.Group[a]) - int(l.Group[b]) })
	for j, k := range perm {
		if int(l.Group[k]) != j/g {
			return nil, false
		}
	}
	return perm, true
}

// checkPerms checks every act-order layer's NAME_perm of weights (see quantizedWeights): a
// permutation of [0, K), so that no gather of the activations reads outside them.
func checkPerms(weights map[string]*tensor.Tensor) error {
	for name, p := range weights {
		if !strings.HasSuffix(name, "_perm") {
			continue
		}
		seen := make([]bool, len(p.I))
		for j, k := range p.I {
			if k < 0 || k >= int64(len(seen)) || seen[k] {
				return fmt.Errorf("lm: weight %s is no permutation: element %d is %d", name, j, k)
			}
			seen[k] = true
		}
	}
	return nil
}

// permuteInputs is l with its input channels in perm's order: column j is l's column perm[j],
// and the group of column j is j / g. The scales and zero points, by group, are l's.
func permuteInputs(l *quant.Layer, perm []int) *quant.Layer {
	p := *l
	p.Q = make([]uint8, len(l.Q))
	p.Group = make([]int32, l.K)
	for n := range l.N {
		row, src := p.Q[n*l.K:(n+1)*l.K], l.Q[n*l.K:(n+1)*l.K]
		for j, k := range perm {
			row[j] = src[k]
		}
	}
	for j, k := range perm {
		p.Group[j] = l.Group[k]
	}
	return &p
}

// opLayout is the canonical layer in the dequantize op's layout: q u8 [N, K] (8 bits) or
// [N, K/2] with input k in byte k/2's low nibble for even k (4 bits); the f16 scales as f32
// [N, G], which the op's (q − z)·s computes exactly as Layer.Dequantize does; zeros u8 [N, G].
func opLayout(name string, l *quant.Layer) map[string]*tensor.Tensor {
	per := 8 / l.Bits
	q := tensor.Empty(ir.T(ir.U8, l.N, l.K/per))
	if per == 1 {
		for i, v := range l.Q {
			q.I[i] = int64(v)
		}
	} else {
		for i := range q.I {
			q.I[i] = int64(l.Q[2*i]) | int64(l.Q[2*i+1])<<4
		}
	}
	s := tensor.Empty(ir.T(ir.F32, l.N, l.G))
	z := tensor.Empty(ir.T(ir.U8, l.N, l.G))
	for i := range s.F {
		s.F[i] = float64(l.Scales[i])
		z.I[i] = int64(l.Zeros[i])
	}
	return map[string]*tensor.Tensor{name + "_q": q, name + "_scale": s, name + "_zero": z}
}
