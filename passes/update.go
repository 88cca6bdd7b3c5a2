package passes

import (
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// updateView reports whether an update kernel reads its update through view v (the K or V rows of
// a projection, split and transposed into [B, KVH, T, D]): v leads through views only to the
// update, never to the operand it writes over or the positions, which stay plain buffers.
func updateView(v *ir.Value, gr *group) bool {
	if !isView(v.Op) {
		return false
	}
	for u := range gr.members {
		if u.Op != ops.UpdateSliceOp || v == u.Args[0] || v == u.Args[2] {
			return false
		}
		for x := u.Args[1]; ; x = x.Args[0] {
			if x == v {
				return true
			}
			if !isView(x.Op) || !gr.views[x] {
				return false
			}
		}
	}
	return false
}

// updateOperand returns the buffer an update kernel's update_slice writes over (its first
// operand), or nil for any other kernel.
func updateOperand(k *Kernel) *Buffer {
	if k.Kind != Update {
		return nil
	}
	if ps := updatePairs(k); len(ps) == 1 {
		return ps[0].in
	}
	return nil
}

// updatePair is an update_slice a kernel computes and writes: the buffer of its operand and
// the one its result goes to.
type updatePair struct{ in, out *Buffer }

// updatePairs lists the update_slices whose results kernel k writes: an update kernel's one, or
// the cache updates an attention kernel appends itself (appendkv.go).
func updatePairs(k *Kernel) []updatePair {
	if k.Kind != Update && k.Kind != Attention || k.Body == nil {
		return nil
	}
	reads := map[*ir.Value]*Buffer{}
	for j, in := range k.Body.Inputs() {
		if j < len(k.Reads) {
			reads[in] = k.Reads[j]
		}
	}
	var ps []updatePair
	for j, o := range k.Body.Outputs {
		if v := o.Value; v.Op == ops.UpdateSliceOp && j < len(k.Writes) && reads[v.Args[0]] != nil {
			ps = append(ps, updatePair{in: reads[v.Args[0]], out: k.Writes[j]})
		}
	}
	return ps
}

// donations finds the update kernels whose result may take the memory of their operand when that
// operand is a graph input and the result a graph output of its type, read by no other kernel
// and not itself an output: the program donates the input to the output (JAX's donate_argnums,
// XLA's input/output aliasing), as a KV cache kept as state is. It returns output → input.
func donations(kg *KernelGraph) map[*Buffer]*Buffer {
	readers := map[*Buffer]int{}
	for _, k := range kg.Kernels {
		for _, b := range k.Reads {
			readers[b]++
		}
	}
	for _, b := range kg.Outputs {
		readers[b]++ // an input that is an output keeps its value
	}
	alias := map[*Buffer]*Buffer{}
	taken := map[*Buffer]bool{}
	for _, k := range kg.Kernels {
		if k.BindTime {
			continue
		}
		for _, p := range updatePairs(k) {
			in, out := p.in, p.out
			if in.Kind != InputBuffer || readers[in] != 1 || taken[in] || out.Kind != OutputBuffer || !out.Type.Equal(in.Type) || alias[out] != nil {
				continue
			}
			alias[out], taken[in] = in, true
		}
	}
	return alias
}

// updatesInPlace marks the kernels whose update_slices all write over their operand's memory: a
// temp whose last reader they are (inPlace, from planMemory) or a donated input (alias).
func updatesInPlace(kg *KernelGraph, inPlace, alias map[*Buffer]*Buffer) {
	for _, k := range kg.Kernels {
		ps := updatePairs(k)
		k.InPlace = len(ps) > 0
		for _, p := range ps {
			if inPlace[p.out] != p.in && alias[p.out] != p.in {
				k.InPlace = false
			}
		}
	}
}

// updateSpace is what an update kernel's launch covers: the update alone when it writes in
// place, else the whole result (every element copied or updated).
func updateSpace(k *Kernel) ir.Shape {
	if k.InPlace {
		for _, v := range k.Body.Values {
			if v.Op == ops.UpdateSliceOp {
				return v.Args[1].Type.Shape
			}
		}
	}
	return k.Space
}
